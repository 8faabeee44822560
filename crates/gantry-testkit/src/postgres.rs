//! A fresh PostgreSQL database for one test, dropped when the test ends.
//!
//! The server is `GANTRY_TEST_POSTGRES` (a URL without a database,
//! default `postgres://postgres@127.0.0.1:5432`). When it cannot be
//! reached the test fails, saying so, unless `GANTRY_TEST_NO_POSTGRES=1`
//! is set outside CI (`CI=true`): then [`TestDatabase::create`] returns
//! `None` and the test skips, printing why. CI never skips.

use std::time::Duration;

use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection};

/// The server tests use unless `GANTRY_TEST_POSTGRES` names another.
pub const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432";

/// How long to wait for the server before calling it unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A database `gantry_test_<uuid>` made for one test; dropped (with any
/// connection still open to it) when this is.
#[derive(Debug)]
pub struct TestDatabase {
    server: String,
    name: String,
}

impl TestDatabase {
    /// Creates the database; `None` when PostgreSQL is unreachable and the
    /// environment allows skipping (see the module's doc). Panics, naming
    /// the server and the fix, when it is unreachable and skipping is not allowed.
    pub async fn create() -> Option<Self> {
        Self::new(true).await
    }

    /// Like [`TestDatabase::create`], but leaves the database to be made by
    /// the code under test (it is still dropped, if made, at the end).
    pub async fn create_later() -> Option<Self> {
        Self::new(false).await
    }

    async fn new(make: bool) -> Option<Self> {
        let server = std::env::var("GANTRY_TEST_POSTGRES")
            .unwrap_or_else(|_| DEFAULT_SERVER.to_owned())
            .trim_end_matches('/')
            .to_owned();
        let mut admin = match connect(&format!("{server}/postgres")).await {
            Ok(conn) => conn,
            Err(e) => {
                let ci = std::env::var("CI").is_ok_and(|v| v == "true");
                let skip = std::env::var("GANTRY_TEST_NO_POSTGRES").is_ok_and(|v| v == "1");
                if skip && !ci {
                    eprintln!(
                        "SKIPPED: PostgreSQL at {server} is unreachable ({e}) and GANTRY_TEST_NO_POSTGRES=1"
                    );
                    return None;
                }
                panic!(
                    "PostgreSQL at {server} is unreachable: {e}. Start it (.ci/run does), \
                     point GANTRY_TEST_POSTGRES at one, or set GANTRY_TEST_NO_POSTGRES=1 \
                     to skip these tests locally (never in CI)"
                );
            }
        };
        let name = format!("gantry_test_{}", uuid::Uuid::now_v7().simple());
        if !make {
            let _ = admin.close().await;
            return Some(Self { server, name });
        }
        // The name is ours: `gantry_test_` and hex digits.
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("create database {name} on {server}: {e}"));
        let _ = admin.close().await;
        Some(Self { server, name })
    }

    /// The database's URL.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop runs inside the test's runtime, which cannot be blocked on:
        // a thread of its own with a runtime of its own drops the database.
        let admin = format!("{}/postgres", self.server);
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let mut conn = connect(&admin).await.map_err(|e| e.to_string())?;
                sqlx::query(AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = conn.close().await;
                Ok::<_, String>(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

async fn connect(url: &str) -> Result<PgConnection, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(url)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer in {CONNECT_TIMEOUT:?}")),
    }
}
