//! Building a new database's schema in one go: every migration's SQL in one
//! transaction, then the migrations recorded in the migrator's table with the
//! rows sqlx's `Migrator` would have written, so that it later finds them all
//! applied. `Migrator::run` costs a transaction, a bookkeeping insert and an
//! update per migration, each a round trip to the connection's thread; on a
//! new file none of that buys anything.

use std::fmt::Write as _;
use std::time::Instant;

use sqlx::AssertSqlSafe;
use sqlx::migrate::{MigrateError, Migration, Migrator};
use sqlx::sqlite::SqliteConnection;

/// The table `Migrator` creates, in the very words it uses: SQLite keeps a
/// table's `CREATE` text in the schema, so the file matches one made by
/// `Migrator::run` (a test compares them).
fn migrations_table(table: &str) -> String {
    format!(
        r#"
CREATE TABLE IF NOT EXISTS {table} (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
);
                "#
    )
}

/// Whether `migrator`'s migrations can run as one batch: not if one must run
/// outside a transaction, or if the migrator wants schemas made first.
pub(crate) fn applies(migrator: &Migrator) -> bool {
    !migrator.no_tx && migrator.create_schemas.is_empty() && migrator.iter().all(|m| !m.no_tx)
}

/// The migrations `Migrator::run` applies to an empty database, in order.
pub(crate) fn ups(migrator: &Migrator) -> impl Iterator<Item = &Migration> {
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
}

/// What the rows recording the migrations say of when they ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// Now, and how long they took: a file made for use.
    Measured,
    /// A placeholder install time and no duration: an image (`image.rs`),
    /// the same bytes every time, its install times set when it is used.
    Placeholder,
}

/// Applies every migration of `migrator` to the empty database on `conn`, in
/// one transaction, and records each as applied.
pub(crate) async fn apply(
    conn: &mut SqliteConnection,
    migrator: &Migrator,
    stamp: Stamp,
) -> Result<(), MigrateError> {
    let table = &*migrator.table_name;
    let mut sql = String::from("BEGIN;");
    sql.push_str(&migrations_table(table));
    for migration in ups(migrator) {
        sql.push_str(migration.sql.as_str());
        // A migration may end in a comment or without a semicolon.
        sql.push_str("\n;\n");
    }
    let start = Instant::now();
    if let Err(e) = sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut *conn).await {
        // A failed statement leaves the transaction open; the scratch file is
        // discarded anyway, but the connection is closed cleanly.
        let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
        return Err(MigrateError::Execute(e));
    }
    let sql = record(table, ups(migrator), stamp, start.elapsed().as_nanos());
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(&mut *conn)
        .await
        .map_err(MigrateError::Execute)?;
    Ok(())
}

/// The rows `Migrator::run` inserts for `migrations`, then the commit. They
/// ran together, so each is given an equal share of `nanos`, the time they
/// took (sqlx only keeps it for the record), unless `stamp` asks for an
/// image's rows.
fn record<'a>(
    table: &str,
    migrations: impl Iterator<Item = &'a Migration>,
    stamp: Stamp,
    nanos: u128,
) -> String {
    let migrations: Vec<&Migration> = migrations.collect();
    let count = u128::try_from(migrations.len().max(1)).unwrap_or(1);
    let (share, column, installed_on) = match stamp {
        // The install time is the column's default, `CURRENT_TIMESTAMP`.
        Stamp::Measured => (
            i64::try_from(nanos / count).unwrap_or(i64::MAX),
            "",
            String::new(),
        ),
        Stamp::Placeholder => (
            0,
            ", installed_on",
            format!(", '{}'", crate::image::PLACEHOLDER),
        ),
    };
    let mut sql = String::new();
    for m in migrations {
        let description = m.description.replace('\'', "''");
        let _ = write!(
            sql,
            "INSERT INTO {table} (version, description, success, checksum, execution_time{column}) \
             VALUES ({}, '{description}', TRUE, X'",
            m.version
        );
        sql.push_str(&hex(&m.checksum));
        let _ = write!(sql, "', {share}{installed_on});");
    }
    sql.push_str("COMMIT;");
    sql
}

/// `bytes` in lower-case hex: a checksum as SQL's `X'..'` and the image's
/// manifest write it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}
