//! Compacting a PostgreSQL database, as far as a client can: `VACUUM
//! (ANALYZE)` makes dead rows' space reusable and refreshes the planner's
//! statistics; the sizes are `pg_database_size` before and after. There is
//! no incremental or auto-vacuum switch to make (the server's autovacuum
//! is its own setting), so both flags of the request change nothing here.
//! `VACUUM FULL` is not run: it locks every table against readers and
//! writers of every process sharing the database for as long as it takes.

use super::PostgresStore;
use crate::StoreError;
use crate::compact::{CompactMode, CompactRequest, Compaction, bytes};
use crate::shared::db_error;

/// Vacuums the database.
pub(super) async fn compact(
    store: &PostgresStore,
    _request: CompactRequest,
) -> Result<Compaction, StoreError> {
    let size_before = size(store).await?;
    // VACUUM cannot run in a transaction: a bare statement on the pool is
    // its own. Tables of other owners in a shared database are skipped
    // with a warning, not an error.
    sqlx::raw_sql("VACUUM (ANALYZE)")
        .execute(&store.pool)
        .await
        .map_err(db_error("vacuum"))?;
    let size_after = size(store).await?;
    Ok(Compaction {
        mode: CompactMode::PostgresVacuum,
        size_before,
        size_after,
    })
}

/// The database's size on disk, in bytes.
async fn size(store: &PostgresStore) -> Result<u64, StoreError> {
    let n: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
        .fetch_one(&store.pool)
        .await
        .map_err(db_error("read the database size"))?;
    Ok(bytes(n))
}
