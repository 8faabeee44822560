//! Lifecycle: health, capabilities, initialize, shutdown.

use std::collections::HashMap;

use gantry_core::ThreadQuery;
use gantry_grpc::clip;
use tonic::Status;

use super::Ctx;
use crate::names::wire;
use crate::pb;
use crate::pb::health_check_response::Status as Health;
use crate::status::status;

/// What the server reports as features.
const FEATURES: &[&str] = &[
    "streaming",
    "tool_calling",
    "structured_output",
    "tools",
    "skills",
    "context_management",
    "hitl",
    "external_tasks",
    "permissions",
    "todos",
    "providers",
    "planning",
    "memory",
    "mcp",
    "lsp",
    "cron",
    "events",
    "agentic_loop",
    "delegation",
    "observability",
];

/// What `GetCapabilities` reports as the session limit: the engine sets
/// none (threads leave memory when idle), and A3S's clients read 0 as "no
/// sessions", so the largest count the field holds says "unlimited".
const MAX_CONCURRENT_SESSIONS: u32 = u32::MAX;

/// Gantry as `AgentInfo`.
pub(crate) fn agent_info() -> pb::AgentInfo {
    pb::AgentInfo {
        name: "gantry".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        description: "Gantry: one runtime for coding agents".to_owned(),
        author: "Gantry".to_owned(),
        license: env!("CARGO_PKG_LICENSE").to_owned(),
        homepage: String::new(),
    }
}

/// `HealthCheck`: degraded until `Initialize` (and again after `Shutdown`),
/// as A3S's server says; then healthy, or degraded with the failing
/// dependency in `details`. A server stopping (its grace period) is
/// unhealthy and says it shuts down: it takes no new work.
pub(crate) async fn health_check(
    ctx: &Ctx,
    _req: pb::HealthCheckRequest,
) -> Result<pb::HealthCheckResponse, Status> {
    let mut details = HashMap::new();
    details.insert("version".to_owned(), env!("CARGO_PKG_VERSION").to_owned());
    if ctx.is_stopping() {
        details.insert("initialized".to_owned(), "false".to_owned());
        details.insert("shutting_down".to_owned(), "true".to_owned());
        return Ok(pb::HealthCheckResponse {
            status: Health::Unhealthy.into(),
            message: "shutting down: calls in flight get the grace period".to_owned(),
            details,
        });
    }
    if !ctx.is_initialized() {
        details.insert("initialized".to_owned(), "false".to_owned());
        return Ok(pb::HealthCheckResponse {
            status: Health::Degraded.into(),
            message: "Agent not initialized: call Initialize".to_owned(),
            details,
        });
    }
    details.insert("initialized".to_owned(), "true".to_owned());
    let probe = ThreadQuery {
        limit: 1,
        ..ThreadQuery::default()
    };
    match ctx.engine.threads().list(&probe).await {
        Ok(_) => {
            details.insert("store".to_owned(), "ok".to_owned());
            Ok(pb::HealthCheckResponse {
                status: Health::Healthy.into(),
                message: "healthy".to_owned(),
                details,
            })
        }
        Err(e) => {
            details.insert("store".to_owned(), e.to_string());
            Ok(pb::HealthCheckResponse {
                status: Health::Degraded.into(),
                message: "degraded: the store is failing".to_owned(),
                details,
            })
        }
    }
}

/// `GetCapabilities`: the real tools, the models the engine can reach
/// (its providers' models, else the catalog), and limits.
pub(crate) async fn get_capabilities(
    ctx: &Ctx,
    _req: pb::GetCapabilitiesRequest,
) -> Result<pb::GetCapabilitiesResponse, Status> {
    let mut specs = ctx.engine.tool_specs();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let tools: Vec<pb::ToolCapability> = specs
        .iter()
        .map(|spec| pb::ToolCapability {
            name: wire(&spec.name).to_owned(),
            description: spec.description.clone(),
            parameters: spec
                .parameters
                .get("properties")
                .and_then(|p| p.as_object())
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default(),
            r#async: false,
        })
        .collect();
    let catalog = ctx.catalog();
    let providers = ctx.engine.providers();
    let configured: Vec<(String, String)> = if !providers.is_empty() {
        providers
            .list()
            .into_iter()
            .flat_map(|p| {
                let name = p.name.clone();
                p.models.into_iter().map(move |m| (name.clone(), m))
            })
            .collect()
    } else {
        catalog
            .entries()
            .map(|(id, e)| (e.provider.clone(), id.to_owned()))
            .collect()
    };
    let models = configured
        .into_iter()
        .map(|(provider, model)| {
            let mut features = Vec::new();
            if let Some(info) = catalog.get(&model) {
                for (on, name) in [
                    (info.tool_call, "tools"),
                    (info.reasoning, "reasoning"),
                    (info.attachment, "attachments"),
                ] {
                    if on {
                        features.push(name.to_owned());
                    }
                }
            }
            pb::ModelCapability {
                provider,
                model,
                features,
            }
        })
        .collect();
    let default_model = ctx.engine.providers().default_model();
    let max_context_tokens = catalog
        .get(&default_model)
        .map_or(0, |info| info.limit.context);
    let mut metadata = HashMap::new();
    metadata.insert("default_model".to_owned(), default_model);
    Ok(pb::GetCapabilitiesResponse {
        info: Some(agent_info()),
        features: FEATURES.iter().map(|f| (*f).to_owned()).collect(),
        limits: Some(pb::ResourceLimits {
            max_context_tokens,
            max_concurrent_sessions: MAX_CONCURRENT_SESSIONS,
            max_tools_per_request: u32::try_from(tools.len()).unwrap_or(u32::MAX),
        }),
        tools,
        models,
        metadata,
    })
}

/// `Initialize`: sets the default workspace of new sessions (it must be an
/// existing directory), adds `env` to the environment of every command the
/// agent and scheduled jobs run, and marks the server initialized.
pub(crate) async fn initialize(
    ctx: &Ctx,
    req: pb::InitializeRequest,
) -> Result<pb::InitializeResponse, Status> {
    if !req.workspace.trim().is_empty() {
        let dir = std::fs::canonicalize(&req.workspace)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                Status::invalid_argument(format!(
                    "workspace: {} is not an existing directory",
                    clip(&req.workspace)
                ))
            })?;
        ctx.set_workspace(dir);
    }
    if !req.env.is_empty() {
        ctx.engine
            .set_command_env(req.env.into_iter().collect())
            .map_err(|e| Status::invalid_argument(format!("env: {e}")))?;
    }
    ctx.set_initialized(true);
    Ok(pb::InitializeResponse {
        success: true,
        message: format!("initialized; workspace {}", ctx.workspace().display()),
        info: Some(agent_info()),
    })
}

/// `Shutdown`: shuts the agent down as A3S's server does: running turns
/// are interrupted, every event is stored, and the server is back to not
/// initialized (`HealthCheck` degraded until `Initialize`) while it keeps
/// serving. With `ServeOptions::exit_on_shutdown` the process stops too.
pub(crate) async fn shutdown(
    ctx: &Ctx,
    _req: pb::ShutdownRequest,
) -> Result<pb::ShutdownResponse, Status> {
    if ctx.exit_on_shutdown() {
        ctx.set_initialized(false);
        ctx.request_shutdown();
        return Ok(pb::ShutdownResponse {
            success: true,
            message: "Agent shutdown: the server stops; running turns get a grace period"
                .to_owned(),
        });
    }
    ctx.set_initialized(false);
    ctx.engine.shutdown().await.map_err(status)?;
    Ok(pb::ShutdownResponse {
        success: true,
        message: "Agent shutdown: running turns stopped, state flushed; Initialize to start again"
            .to_owned(),
    })
}
