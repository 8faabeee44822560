//! Compacting the SQLite file: `VACUUM` (after switching to incremental
//! auto-vacuum when asked) or `PRAGMA incremental_vacuum`, then a WAL
//! checkpoint so the file on disk shrinks too. It runs on the writer's
//! connection under the write lock: no commit of this process interleaves,
//! and `VACUUM` must run outside a transaction, which commits never leave
//! open.

use sqlx::SqliteConnection;

use super::SqliteStore;
use crate::StoreError;
use crate::compact::{CompactMode, CompactRequest, Compaction, bytes};
use crate::shared::db_error;

/// Compacts the file as `request` says.
pub(super) async fn compact(
    store: &SqliteStore,
    request: CompactRequest,
) -> Result<Compaction, StoreError> {
    let mut writer = store.lock_writes().await;
    let conn = writer.conn(&store.pool).await?;
    let done = run(conn, request).await;
    if done.is_err() {
        writer.discard().await;
    }
    done
}

async fn run(
    conn: &mut SqliteConnection,
    request: CompactRequest,
) -> Result<Compaction, StoreError> {
    let size_before = size(conn).await?;
    let mode = if request.incremental {
        // One row per page freed: stepping through them all is what frees them.
        sqlx::query("PRAGMA incremental_vacuum")
            .fetch_all(&mut *conn)
            .await
            .map_err(db_error("incremental vacuum"))?;
        CompactMode::Incremental
    } else {
        if request.enable_auto_vacuum {
            // Takes effect with the VACUUM that follows.
            sqlx::query("PRAGMA auto_vacuum = INCREMENTAL")
                .execute(&mut *conn)
                .await
                .map_err(db_error("set auto_vacuum"))?;
        }
        sqlx::query("VACUUM")
            .execute(&mut *conn)
            .await
            .map_err(db_error("vacuum"))?;
        CompactMode::Full
    };
    // Best effort: a reader still in the WAL only keeps it from shrinking.
    let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_all(&mut *conn)
        .await;
    let size_after = size(conn).await?;
    Ok(Compaction {
        mode,
        size_before,
        size_after,
    })
}

/// The database's size: `page_count * page_size`, in bytes.
async fn size(conn: &mut SqliteConnection) -> Result<u64, StoreError> {
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error("read page_count"))?;
    let page: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error("read page_size"))?;
    Ok(bytes(pages.saturating_mul(page)))
}
