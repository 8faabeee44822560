//! Providers and settings: small configuration tables, one statement each.

use gantry_types::ProviderConfig;
use sqlx::SqlitePool;

use super::db_error;
use crate::secrets::Sealer;
use crate::{StoreError, sql};

/// Every stored provider, by name.
pub(super) async fn providers(
    pool: &SqlitePool,
    sealer: &Sealer,
) -> Result<Vec<ProviderConfig>, StoreError> {
    let rows: Vec<(String, String)> = sqlx::query_as(sql::PROVIDERS)
        .fetch_all(pool)
        .await
        .map_err(db_error("read providers"))?;
    rows.iter()
        .map(|(name, data)| decode_provider(name, &sealer.open_json(data)))
        .collect()
}

/// Inserts or replaces a provider.
pub(super) async fn put_provider(
    pool: &SqlitePool,
    writer: &super::WriteLock,
    sealer: &Sealer,
    provider: &ProviderConfig,
) -> Result<(), StoreError> {
    let data = serde_json::to_string(provider)
        .map_err(|e| StoreError::Database(format!("provider {}: encode: {e}", provider.name)))?;
    let data = sealer.seal_json(data)?;
    let _writer = writer.lock().await;
    sqlx::query(sql::UPSERT_PROVIDER)
        .bind(&provider.name)
        .bind(data)
        .execute(pool)
        .await
        .map_err(db_error("write provider"))?;
    Ok(())
}

/// Deletes a provider; false if none had that name.
pub(super) async fn delete_provider(
    pool: &SqlitePool,
    writer: &super::WriteLock,
    name: &str,
) -> Result<bool, StoreError> {
    let _writer = writer.lock().await;
    let done = sqlx::query(sql::DELETE_PROVIDER)
        .bind(name)
        .execute(pool)
        .await
        .map_err(db_error("delete provider"))?;
    Ok(done.rows_affected() > 0)
}

/// A setting's value.
pub(super) async fn setting(pool: &SqlitePool, key: &str) -> Result<Option<String>, StoreError> {
    let row: Option<(String,)> = sqlx::query_as(sql::SETTING)
        .bind(key)
        .fetch_optional(pool)
        .await
        .map_err(db_error("read setting"))?;
    Ok(row.map(|(v,)| v))
}

/// Sets a setting.
pub(super) async fn put_setting(
    pool: &SqlitePool,
    writer: &super::WriteLock,
    key: &str,
    value: &str,
) -> Result<(), StoreError> {
    let _writer = writer.lock().await;
    sqlx::query(sql::UPSERT_SETTING)
        .bind(key)
        .bind(value)
        .execute(pool)
        .await
        .map_err(db_error("write setting"))?;
    Ok(())
}

fn decode_provider(name: &str, data: &str) -> Result<ProviderConfig, StoreError> {
    let provider: ProviderConfig = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("provider {name}: data: {e}")))?;
    if provider.name != name {
        return Err(StoreError::Corrupt(format!(
            "provider {name}: data holds provider {}",
            provider.name
        )));
    }
    Ok(provider)
}
