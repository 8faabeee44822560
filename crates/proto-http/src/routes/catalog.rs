//! Agents, providers and models (keys never returned), MCP servers.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use gantry_core::AgentSpec;
use gantry_types::mcp::McpServerConfig;
use gantry_types::{AgentId, ProviderConfig};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::threads::required;
use super::{Answer, Created};
use crate::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::views::{Object, Objects, to_json};

/// `POST /v1/agents`: creates, or replaces the agent of that `id`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentRequest {
    /// Its id [default: a new one].
    #[serde(default)]
    id: Option<String>,
    /// A name to show.
    #[serde(default)]
    name: Option<String>,
    /// The SDK it runs as.
    #[serde(default)]
    sdk: Option<String>,
    /// Its model.
    #[serde(default)]
    model: Option<String>,
    /// Reasoning effort.
    #[serde(default)]
    reasoning: Option<String>,
    /// System instructions.
    #[serde(default)]
    instructions: Option<String>,
}

/// Every agent.
#[utoipa::path(get, path = "/v1/agents", tag = "catalog",
    responses((status = 200, body = Objects)))]
pub(crate) async fn agents(State(state): State<AppState>) -> Answer<Objects> {
    let agents = state.engine.agents().list().await?;
    Ok(Json(Objects {
        items: agents.iter().map(to_json).collect(),
    }))
}

/// Create or replace an agent.
#[utoipa::path(post, path = "/v1/agents", tag = "catalog", request_body = AgentRequest,
    responses((status = 201, body = Object),
        (status = 422, description = "A bad field", body = ErrorBody)))]
pub(crate) async fn save_agent(State(state): State<AppState>, bytes: Bytes) -> Created<Object> {
    let req: AgentRequest = crate::error::optional_body(&bytes)?;
    let spec = AgentSpec {
        id: req.id.map(AgentId),
        name: req.name,
        sdk: req.sdk,
        model: req.model,
        reasoning: req.reasoning,
        instructions: req.instructions,
    };
    let agent = state.engine.agents().save(spec).await?;
    Ok((StatusCode::CREATED, Json(Object(to_json(&agent)))))
}

/// One agent.
#[utoipa::path(get, path = "/v1/agents/{id}", tag = "catalog",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = Object),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub(crate) async fn agent(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Object> {
    let agent = state.engine.agents().get(&AgentId(id)).await?;
    Ok(Json(Object(to_json(&agent))))
}

/// Delete an agent (and its skills dir).
#[utoipa::path(delete, path = "/v1/agents/{id}", tag = "catalog",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub(crate) async fn delete_agent(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.engine.agents().delete(&AgentId(id.clone())).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no agent {id}")))
    }
}

/// A provider without its secrets.
fn provider_view(p: &ProviderConfig) -> Value {
    json!({
        "name": p.name,
        "kind": to_json(&p.kind),
        "base_url": p.base_url,
        "api_key_env": p.api_key_env,
        "has_api_key": p.api_key.is_some(),
        "header_names": p.headers.keys().collect::<Vec<_>>(),
        "models": p.models,
    })
}

/// Every configured provider; keys and header values are never returned.
#[utoipa::path(get, path = "/v1/providers", tag = "catalog",
    responses((status = 200, body = Objects)))]
pub(crate) async fn providers(State(state): State<AppState>) -> Answer<Objects> {
    let providers = state.engine.providers().list();
    Ok(Json(Objects {
        items: providers.iter().map(provider_view).collect(),
    }))
}

/// One provider; its key and header values are never returned.
#[utoipa::path(get, path = "/v1/providers/{name}", tag = "catalog",
    params(("name" = String, Path, description = "Provider name")),
    responses((status = 200, body = Object),
        (status = 404, description = "No such provider", body = ErrorBody)))]
pub(crate) async fn provider(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Answer<Object> {
    let provider = state.engine.providers().get(&name)?;
    Ok(Json(Object(provider_view(&provider))))
}

/// The model catalog (models.dev entries), and the default model.
#[utoipa::path(get, path = "/v1/models", tag = "catalog",
    responses((status = 200, body = Objects)))]
pub(crate) async fn models(State(state): State<AppState>) -> Answer<Objects> {
    let providers = state.engine.providers();
    let default = providers.default_model();
    let items = providers
        .catalog()
        .entries()
        .map(|(id, entry)| {
            let mut value = to_json(entry);
            if let Value::Object(map) = &mut value {
                map.insert("id".to_owned(), json!(id));
                map.insert("default".to_owned(), json!(id == default));
            }
            value
        })
        .collect();
    Ok(Json(Objects { items }))
}

/// MCP servers and whether each is connected.
#[utoipa::path(get, path = "/v1/mcp/servers", tag = "catalog",
    responses((status = 200, body = Objects)))]
pub(crate) async fn mcp_servers(State(state): State<AppState>) -> Answer<Objects> {
    Ok(Json(Objects {
        items: state.engine.mcp().servers().iter().map(to_json).collect(),
    }))
}

/// Add an MCP server (the engine's `McpServerConfig` JSON) and connect it.
#[utoipa::path(post, path = "/v1/mcp/servers", tag = "catalog", request_body = Object,
    responses((status = 201, body = Objects, description = "The servers now"),
        (status = 409, description = "A server of that name exists", body = ErrorBody),
        (status = 422, description = "A bad config", body = ErrorBody)))]
pub(crate) async fn add_mcp_server(
    State(state): State<AppState>,
    bytes: Bytes,
) -> Created<Objects> {
    let config: McpServerConfig = required(&bytes)?;
    state.engine.mcp().add_server(config).await?;
    let items = state.engine.mcp().servers().iter().map(to_json).collect();
    Ok((StatusCode::CREATED, Json(Objects { items })))
}

/// Remove an MCP server.
#[utoipa::path(delete, path = "/v1/mcp/servers/{name}", tag = "catalog",
    params(("name" = String, Path, description = "Server name")),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "No such server", body = ErrorBody)))]
pub(crate) async fn remove_mcp_server(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.engine.mcp().remove_server(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no MCP server {name}")))
    }
}
