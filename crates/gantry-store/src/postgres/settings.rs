//! Providers and settings: small configuration tables, one statement each.

use gantry_types::ProviderConfig;
use sqlx::PgPool;

use super::db_error;
use crate::secrets::Sealer;
use crate::{StoreError, sql};

/// Every stored provider, by name.
pub(super) async fn providers(
    pool: &PgPool,
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
    pool: &PgPool,
    sealer: &Sealer,
    provider: &ProviderConfig,
) -> Result<(), StoreError> {
    let data = serde_json::to_string(provider)
        .map_err(|e| StoreError::Database(format!("provider {}: encode: {e}", provider.name)))?;
    let data = sealer.seal_json(data)?;
    sqlx::query(sql::UPSERT_PROVIDER)
        .bind(&provider.name)
        .bind(data)
        .execute(pool)
        .await
        .map_err(db_error("write provider"))?;
    Ok(())
}

/// Deletes a provider; false if none had that name.
pub(super) async fn delete_provider(pool: &PgPool, name: &str) -> Result<bool, StoreError> {
    let done = sqlx::query(sql::DELETE_PROVIDER)
        .bind(name)
        .execute(pool)
        .await
        .map_err(db_error("delete provider"))?;
    Ok(done.rows_affected() > 0)
}

/// A setting's value.
pub(super) async fn setting(pool: &PgPool, key: &str) -> Result<Option<String>, StoreError> {
    let row: Option<(String,)> = sqlx::query_as(sql::SETTING)
        .bind(key)
        .fetch_optional(pool)
        .await
        .map_err(db_error("read setting"))?;
    Ok(row.map(|(v,)| v))
}

/// Sets a setting.
pub(super) async fn put_setting(pool: &PgPool, key: &str, value: &str) -> Result<(), StoreError> {
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
