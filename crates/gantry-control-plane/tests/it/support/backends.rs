//! The control plane's two store backends, for tests that run on both: a
//! SQLite file in a temp dir, and a fresh PostgreSQL database per test
//! (`gantry_testkit::postgres`: `GANTRY_TEST_POSTGRES` names the server; an
//! unreachable one fails the test unless `GANTRY_TEST_NO_POSTGRES=1` outside
//! CI, which skips it).

use std::sync::Arc;

use gantry_control_plane::store::{
    CONTROL_PLANE_DB, ControlPlaneStore, PostgresControlPlaneStore, SqliteControlPlaneStore,
};
use gantry_testkit::postgres::TestDatabase;
use tempfile::TempDir;

/// Which backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `control-plane.db` in a temp dir.
    Sqlite,
    /// A database of its own on the test server.
    Postgres,
}

/// Where a test's store lives; every [`StoreAt::open`] opens the same data,
/// as another process (or a restart) would. Dropping it removes the data.
pub(crate) struct StoreAt {
    /// The backend.
    pub backend: Backend,
    /// A temp dir (the SQLite file's, and room for anything else).
    pub dir: TempDir,
    db: Option<TestDatabase>,
}

impl StoreAt {
    /// A new, empty place on `backend`; `None` when PostgreSQL is skipped.
    pub(crate) async fn new(backend: Backend) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let db = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::create().await?),
        };
        Some(Self { backend, dir, db })
    }

    /// Opens the store (migrating it the first time).
    pub(crate) async fn open(&self) -> Arc<dyn ControlPlaneStore> {
        match &self.db {
            None => Arc::new(
                SqliteControlPlaneStore::open_in(self.dir.path())
                    .await
                    .unwrap(),
            ),
            Some(db) => Arc::new(PostgresControlPlaneStore::open(&db.url()).await.unwrap()),
        }
    }

    /// The PostgreSQL database's URL (`None` on SQLite).
    pub(crate) fn postgres_url(&self) -> Option<String> {
        self.db.as_ref().map(TestDatabase::url)
    }

    /// Everything the backend keeps of runners and API tokens, as bytes:
    /// the database file on SQLite, those tables' rows as text on PostgreSQL.
    pub(crate) async fn raw_credentials(&self) -> Vec<u8> {
        let Some(db) = &self.db else {
            return std::fs::read(self.dir.path().join(CONTROL_PLANE_DB)).unwrap();
        };
        let pool = sqlx::PgPool::connect(&db.url()).await.unwrap();
        let mut raw = Vec::new();
        for table in ["runners", "api_tokens"] {
            let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT t::text FROM {table} t"
            )))
            .fetch_all(&pool)
            .await
            .unwrap();
            for (row,) in rows {
                raw.extend(row.into_bytes());
            }
        }
        pool.close().await;
        raw
    }
}

/// For each `case` (an `async fn(StoreAt)`), a module of that name with
/// two tests, `sqlite` and `postgres`, running it on each backend.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                use $crate::support::backends::{Backend, StoreAt};

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let at = StoreAt::new(Backend::Sqlite).await.unwrap();
                    super::$case(at).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some(at) = StoreAt::new(Backend::Postgres).await else {
                        return;
                    };
                    super::$case(at).await;
                }
            }
        )*
    };
}

pub(crate) use on_both_backends;
