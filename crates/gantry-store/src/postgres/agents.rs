//! Agents: one JSON row each.

use gantry_types::{Agent, AgentId};
use sqlx::PgPool;

use super::db_error;
use crate::{StoreError, sql};

/// Every stored agent, by id.
pub(super) async fn agents(pool: &PgPool) -> Result<Vec<Agent>, StoreError> {
    let rows: Vec<(String, String)> = sqlx::query_as(sql::AGENTS)
        .fetch_all(pool)
        .await
        .map_err(db_error("read agents"))?;
    rows.iter().map(|(id, data)| decode(id, data)).collect()
}

/// One agent.
pub(super) async fn agent(pool: &PgPool, id: &AgentId) -> Result<Option<Agent>, StoreError> {
    let row: Option<(String, String)> = sqlx::query_as(sql::AGENT)
        .bind(id.as_str())
        .fetch_optional(pool)
        .await
        .map_err(db_error("read agent"))?;
    row.map(|(id, data)| decode(&id, &data)).transpose()
}

/// Inserts or replaces an agent.
pub(super) async fn put_agent(pool: &PgPool, agent: &Agent) -> Result<(), StoreError> {
    let data = serde_json::to_string(agent)
        .map_err(|e| StoreError::Database(format!("agent {}: encode: {e}", agent.id)))?;
    sqlx::query(sql::UPSERT_AGENT)
        .bind(agent.id.as_str())
        .bind(data)
        .execute(pool)
        .await
        .map_err(db_error("write agent"))?;
    Ok(())
}

/// Deletes an agent; false if none had that id.
pub(super) async fn delete_agent(pool: &PgPool, id: &AgentId) -> Result<bool, StoreError> {
    let done = sqlx::query(sql::DELETE_AGENT)
        .bind(id.as_str())
        .execute(pool)
        .await
        .map_err(db_error("delete agent"))?;
    Ok(done.rows_affected() > 0)
}

fn decode(id: &str, data: &str) -> Result<Agent, StoreError> {
    let agent: Agent = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("agent {id}: data: {e}")))?;
    if agent.id.as_str() != id {
        return Err(StoreError::Corrupt(format!(
            "agent {id}: data holds agent {}",
            agent.id
        )));
    }
    Ok(agent)
}
