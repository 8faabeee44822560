//! Opening a PostgreSQL database the way every Gantry store does (the
//! engine's in `gantry-store`, the control plane's in `gantry-control-plane`):
//! the database created if missing, a small pool, commits that do not wait
//! for the server's disk, the schema brought up to date by the store's own
//! migrations; and the URL shown without its password wherever it is shown.

mod redact;

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateDatabase, MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, Postgres};

pub use redact::redacted;

/// Connections in the pool: a writer's transaction holds one while readers
/// (replays, listings, live followers) use the others.
const MAX_CONNECTIONS: u32 = 8;

/// How long opening waits for the server (and a pool for a free connection).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a database could not be opened. Each names the database by its
/// [`redacted`] URL, never the password.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL could not be parsed.
    #[error("{shown}: not a PostgreSQL URL: {source}")]
    Url {
        /// The URL, redacted.
        shown: String,
        /// What the parser said.
        source: sqlx::Error,
    },
    /// The database did not exist and could not be created.
    #[error("create {shown}: {source}")]
    Create {
        /// The URL, redacted.
        shown: String,
        /// What the server said.
        source: sqlx::Error,
    },
    /// The server could not be reached or refused the connection.
    #[error("connect to {shown}: {source}")]
    Connect {
        /// The URL, redacted.
        shown: String,
        /// What the driver said.
        source: sqlx::Error,
    },
    /// A migration failed (or the database holds another schema, or a
    /// newer one than this build knows).
    #[error("migrate {shown}: {source}")]
    Migrate {
        /// The URL, redacted.
        shown: String,
        /// What the migrator said.
        source: MigrateError,
    },
}

/// Connects to the database at `url` (`postgres://user@host:port/name`),
/// creating it if it does not exist, and runs `migrator` on it.
pub async fn open(url: &str, migrator: &Migrator) -> Result<PgPool, OpenError> {
    let shown = redacted(url);
    let mut options = PgConnectOptions::from_str(url).map_err(|source| OpenError::Url {
        shown: shown.clone(),
        source,
    })?;
    if !url.contains("synchronous_commit") {
        // The trade-off the SQLite stores make (WAL, synchronous=NORMAL): a
        // commit does not wait for its WAL flush (the server flushes within
        // a fraction of a second), so a crash of Gantry loses nothing, and
        // only a crash of the database server's machine can lose the last
        // commits; never a torn log. A URL that sets synchronous_commit
        // (`?options=-c%20synchronous_commit%3Don`) chooses otherwise.
        options = options.options([("synchronous_commit", "off")]);
    }
    let pool_options = || {
        PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .min_connections(0)
            .acquire_timeout(CONNECT_TIMEOUT)
    };
    let connect_error = |source| OpenError::Connect {
        shown: shown.clone(),
        source,
    };
    let pool = match pool_options().connect_with(options.clone()).await {
        Ok(pool) => pool,
        Err(e) if is_missing_database(&e) => {
            // Two processes may race here; the loser finds it made.
            if let Err(source) = Postgres::create_database(url).await
                && !Postgres::database_exists(url).await.unwrap_or(false)
            {
                return Err(OpenError::Create { shown, source });
            }
            pool_options()
                .connect_with(options)
                .await
                .map_err(connect_error)?
        }
        Err(e) => return Err(connect_error(e)),
    };
    if let Err(source) = migrator.run(&pool).await {
        pool.close().await;
        return Err(OpenError::Migrate { shown, source });
    }
    Ok(pool)
}

/// Whether connecting failed because the database does not exist (3D000).
fn is_missing_database(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "3D000")
}
