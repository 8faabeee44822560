//! `AppRequest`s: capabilities, the models threads may use (the catalog
//! and the configured providers' models), configuration, loaded threads.

use gantry_core::ThreadQuery;
use serde_json::{Value, json};

use super::views::wire_thread;
use super::{CodeWhale, ServiceError};
use crate::wire::{AppRequest, AppResponse};

/// What a loaded-thread listing holds at most.
const LOADED_LIMIT: usize = 50;

/// The frames Gantry sends.
const EVENTS: &[&str] = &[
    "response_start",
    "response_delta",
    "response_end",
    "tool_call_start",
    "tool_call_result",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "exec_approval_request",
    "apply_patch_approval_request",
    "exec_command_begin",
    "exec_command_output_delta",
    "exec_command_end",
    "patch_apply_begin",
    "patch_apply_end",
    "turn_started",
    "turn_complete",
    "turn_aborted",
    "thread_goal_updated",
    "thread_goal_cleared",
    "error",
];

impl CodeWhale {
    /// Answers an [`AppRequest`]. A request the engine refuses is answered
    /// `ok: false` with `data.error`, as CodeWhale does.
    pub async fn app_request(&self, req: AppRequest) -> AppResponse {
        match self.app(req).await {
            Ok(data) => AppResponse {
                ok: true,
                data,
                events: Vec::new(),
            },
            Err(e) => AppResponse {
                ok: false,
                data: json!({ "error": e.to_string() }),
                events: Vec::new(),
            },
        }
    }

    async fn app(&self, req: AppRequest) -> Result<Value, ServiceError> {
        Ok(match req {
            AppRequest::Capabilities => json!({
                "routes": ["/thread", "/app", "/prompt", "/thread/{id}/events", "/events",
                           "/thread/{id}/approvals/{approval_id}", "/thread/{id}/interrupt"],
                "config": ["get", "set", "unset", "list"],
                "events": EVENTS,
                "transport": "stdio+http",
                "config_path": self.inner.config_path.get().map(|p| p.display().to_string()),
            }),
            AppRequest::ConfigGet { key } => {
                let value = self.config_get(&key)?;
                json!({ "key": key, "value": value })
            }
            AppRequest::ConfigSet { key, value } => {
                // The value as sent, as CodeWhale answers.
                self.config_set(&key, &value).await?;
                json!({ "key": key, "value": value, "error": null })
            }
            AppRequest::ConfigUnset { key } => {
                self.config_unset(&key).await?;
                json!({ "key": key, "error": null })
            }
            AppRequest::ConfigList => json!({ "values": self.config_list() }),
            AppRequest::Models => json!({ "models": self.models() }),
            AppRequest::ThreadLoadedList => {
                let query = ThreadQuery {
                    archived: Some(false),
                    limit: LOADED_LIMIT,
                    cursor: None,
                };
                let page = self.engine().threads().list(&query).await?;
                let threads: Vec<_> = page
                    .threads
                    .iter()
                    .map(|t| wire_thread(self.engine(), t))
                    .collect();
                json!({ "threads": threads })
            }
        })
    }

    /// The configured providers' models (`PROVIDER/MODEL`), then the catalog's.
    pub(super) fn models(&self) -> Vec<Value> {
        let providers = self.engine().providers();
        let mut models = Vec::new();
        for provider in providers.list() {
            for model in &provider.models {
                models.push(json!({
                    "id": format!("{}/{model}", provider.name),
                    "name": model,
                    "provider": provider.name,
                }));
            }
        }
        for (id, entry) in providers.catalog().entries() {
            models.push(json!({
                "id": id,
                "name": entry.info.name,
                "provider": entry.provider,
                "family": entry.info.family,
                "reasoning": entry.info.reasoning,
                "tool_call": entry.info.tool_call,
                "context_window": entry.info.limit.context,
            }));
        }
        models
    }
}
