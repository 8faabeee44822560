//! Opening a PostgreSQL database the way every Gantry store does (the
//! engine's in `gantry-store`, the control plane's in `gantry-control-plane`):
//! the database created if missing, a small pool, commits that do not wait
//! for the server's disk, the schema brought up to date by the store's own
//! migrations; and the URL shown without its password wherever it is shown.
//!
//! The password may come apart from the URL ([`open_with_password`], from
//! `--store-password-file`), so that it never shows in a command line; a
//! URL without one also takes it from `PGPASSWORD`, else `PGPASSFILE`, else
//! `~/.pgpass` (sqlx-postgres reads them, as libpq does; it skips a
//! passfile that group or others may read).

mod redact;

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor};

pub use redact::{has_password, redacted};

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
    open_with_password(url, None, migrator).await
}

/// Like [`open`], logging in with `password` when given (it wins over one
/// in `url`): a password read from a file, never put in a URL.
pub async fn open_with_password(
    url: &str,
    password: Option<&str>,
    migrator: &Migrator,
) -> Result<PgPool, OpenError> {
    let shown = redacted(url);
    let options = connect_options(url, password)?;
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
            if let Err(source) = create_database(&options).await
                && !database_exists(&options).await.unwrap_or(false)
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

/// How to connect to the database at `url`, with `password` if given (it
/// wins over one in `url`) and commits that do not wait for the server's
/// disk unless the URL says otherwise.
pub fn connect_options(url: &str, password: Option<&str>) -> Result<PgConnectOptions, OpenError> {
    let mut options = PgConnectOptions::from_str(url).map_err(|source| OpenError::Url {
        shown: redacted(url),
        source,
    })?;
    if let Some(password) = password {
        options = options.password(password);
    }
    if !url.contains("synchronous_commit") {
        // The trade-off the SQLite stores make (WAL, synchronous=NORMAL): a
        // commit does not wait for its WAL flush (the server flushes within
        // a fraction of a second), so a crash of Gantry loses nothing, and
        // only a crash of the database server's machine can lose the last
        // commits; never a torn log. A URL that sets synchronous_commit
        // (`?options=-c%20synchronous_commit%3Don`) chooses otherwise.
        options = options.options([("synchronous_commit", "off")]);
    }
    Ok(options)
}

/// The database `options` name, and the options of the maintenance
/// database to create it from: `postgres`, or `template1` when the
/// database is `postgres` itself (as `createdb` and sqlx do). Made from the
/// options rather than the URL, so a password given apart is used too.
fn maintenance(options: &PgConnectOptions) -> (String, PgConnectOptions) {
    let database = options
        .get_database()
        .unwrap_or(options.get_username())
        .to_owned();
    let other = if database == "postgres" {
        "template1"
    } else {
        "postgres"
    };
    (database, options.clone().database(other))
}

/// Creates the database `options` name.
async fn create_database(options: &PgConnectOptions) -> Result<(), sqlx::Error> {
    let (database, maintenance) = maintenance(options);
    let mut conn = maintenance.connect().await?;
    // A name, not a value: it cannot be bound, so it is quoted.
    let sql = format!("CREATE DATABASE \"{}\"", database.replace('"', "\"\""));
    let created = conn.execute(AssertSqlSafe(sql)).await.map(drop);
    let _ = conn.close().await;
    created
}

/// Whether the database `options` name exists.
async fn database_exists(options: &PgConnectOptions) -> Result<bool, sqlx::Error> {
    let (database, maintenance) = maintenance(options);
    let mut conn = maintenance.connect().await?;
    let exists = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(database)
        .fetch_one(&mut conn)
        .await;
    let _ = conn.close().await;
    exists
}

/// Whether connecting failed because the database does not exist (3D000).
fn is_missing_database(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "3D000")
}

#[cfg(test)]
mod tests {
    use sqlx::ConnectOptions;

    use super::connect_options;

    #[test]
    fn a_password_given_apart_is_the_one_sent() {
        // What the driver would log in with: its own rendering of the
        // options as a URL (the options have no getter for the password).
        let options = connect_options("postgres://gantry@db:5432/gantry", Some("FromFile1"))
            .expect("options");
        assert_eq!(options.to_url_lossy().password(), Some("FromFile1"));
        assert_eq!(options.get_username(), "gantry");
        assert_eq!(options.get_database(), Some("gantry"));
        let options = connect_options("postgres://gantry:InUrl1@db/gantry", Some("FromFile1"))
            .expect("options");
        assert_eq!(options.to_url_lossy().password(), Some("FromFile1"));
        let options = connect_options("postgres://gantry:InUrl1@db/gantry", None).expect("options");
        assert_eq!(options.to_url_lossy().password(), Some("InUrl1"));
    }
}
