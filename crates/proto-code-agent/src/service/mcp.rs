//! MCP servers and their tools: registered (the engine persists them),
//! connected and disconnected by name, listed with their state, and the
//! tools of the connected ones as the model is offered them
//! (`mcp__<server>__<tool>`).

use std::collections::HashMap;

use gantry_grpc::clip;
use gantry_types::mcp::{McpServerConfig, McpTransport};
use tonic::Status;
use tonic::codegen::http::{HeaderName, HeaderValue};

use super::Ctx;
use crate::pb;
use crate::pb::mcp_transport::Transport;
use crate::status::{required, status};
use crate::views::u32_of;

/// `RegisterMcpServer`: adds the server (or replaces the one of the same
/// name, disconnecting it) and persists it; it is not connected until
/// `ConnectMcpServer` (or the next start of the server process).
pub(crate) async fn register_mcp_server(
    ctx: &Ctx,
    req: pb::RegisterMcpServerRequest,
) -> Result<pb::RegisterMcpServerResponse, Status> {
    let config = req
        .config
        .ok_or_else(|| Status::invalid_argument("config: required"))?;
    let name = required("config.name", &config.name)?.to_owned();
    let mut server = McpServerConfig::new(name.clone(), transport(&config)?);
    server.enabled = config.enabled;
    // 0 is the field's default: the engine's own timeout applies.
    if config.tool_timeout_secs > 0 {
        server.call_timeout_ms = u64::from(config.tool_timeout_secs) * 1000;
    }
    ctx.engine.mcp().add_server(server).await.map_err(status)?;
    let state = if config.enabled {
        "connect it with ConnectMcpServer"
    } else {
        "disabled"
    };
    Ok(pb::RegisterMcpServerResponse {
        success: true,
        message: format!("registered MCP server `{name}` ({state})"),
    })
}

/// The engine's transport for the config's, checked: a
/// stdio server needs a command and gets `env`; an http one needs an
/// `http(s)://` URL and valid headers, and takes no `env` (nothing is
/// spawned for it).
fn transport(config: &pb::McpServerConfigProto) -> Result<McpTransport, Status> {
    check_env(&config.env)?;
    match config.transport.as_ref().and_then(|t| t.transport.as_ref()) {
        None => Err(Status::invalid_argument(
            "config.transport: required (stdio or http)",
        )),
        Some(Transport::Stdio(stdio)) => {
            let command = required("config.transport.stdio.command", &stdio.command)?;
            Ok(McpTransport::Stdio {
                command: command.to_owned(),
                args: stdio.args.clone(),
                env: config.env.clone().into_iter().collect(),
                cwd: None,
            })
        }
        Some(Transport::Http(http)) => {
            if !config.env.is_empty() {
                return Err(Status::invalid_argument(
                    "config.env: only a stdio server (a process Gantry starts) takes environment variables",
                ));
            }
            let url = required("config.transport.http.url", &http.url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Status::invalid_argument(format!(
                    "config.transport.http.url: `{url}` is not an http:// or https:// URL",
                    url = clip(url)
                )));
            }
            check_headers(&http.headers)?;
            Ok(McpTransport::Http {
                url: url.to_owned(),
                headers: http.headers.clone().into_iter().collect(),
                bearer_token_env: None,
            })
        }
    }
}

/// Environment variable names a process can be given.
fn check_env(env: &HashMap<String, String>) -> Result<(), Status> {
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
            return Err(Status::invalid_argument(format!(
                "config.env: `{key}` is not a valid environment variable",
                key = clip(key)
            )));
        }
    }
    Ok(())
}

/// Headers that can be sent: refused now rather than on every connect.
fn check_headers(headers: &HashMap<String, String>) -> Result<(), Status> {
    for (name, value) in headers {
        if HeaderName::try_from(name.as_str()).is_err() {
            return Err(Status::invalid_argument(format!(
                "config.transport.http.headers: `{name}` is not a valid header name",
                name = clip(name)
            )));
        }
        if HeaderValue::try_from(value.as_str()).is_err() {
            return Err(Status::invalid_argument(format!(
                "config.transport.http.headers: the value of `{name}` is not a valid header value",
                name = clip(name)
            )));
        }
    }
    Ok(())
}

/// Whether the server `name` is enabled; `NOT_FOUND` when no server of
/// that name is registered.
fn registered(ctx: &Ctx, name: &str) -> Result<bool, Status> {
    ctx.engine
        .mcp()
        .servers()
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.enabled)
        .ok_or_else(|| {
            Status::not_found(format!(
                "MCP server `{name}` is not registered",
                name = clip(name)
            ))
        })
}

/// `ConnectMcpServer`: connects the server now (nothing to do when it is
/// connected) and returns the full names of its tools, as the model is
/// offered them. `FAILED_PRECONDITION` for a disabled server, `UNAVAILABLE`
/// when it cannot be started or reached (the reason in the message).
pub(crate) async fn connect_mcp_server(
    ctx: &Ctx,
    req: pb::ConnectMcpServerRequest,
) -> Result<pb::ConnectMcpServerResponse, Status> {
    let name = required("name", &req.name)?;
    if !registered(ctx, name)? {
        return Err(Status::failed_precondition(format!(
            "MCP server `{name}` is disabled; register it with enabled set to connect it",
            name = clip(name)
        )));
    }
    // Known and enabled, so what is left to fail is reaching it (the engine
    // reports every MCP error as invalid input).
    ctx.engine
        .mcp()
        .connect(name)
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let tool_names: Vec<String> = ctx
        .engine
        .mcp()
        .tools()
        .await
        .into_iter()
        .filter(|t| t.server == name)
        .map(|t| t.full_name)
        .collect();
    Ok(pb::ConnectMcpServerResponse {
        success: true,
        message: format!(
            "connected to MCP server `{name}`: {} tools",
            tool_names.len()
        ),
        tool_names,
    })
}

/// `DisconnectMcpServer`: closes the connection (a stdio server's process
/// is stopped); the server stays registered. Nothing to do when it is not
/// connected.
pub(crate) async fn disconnect_mcp_server(
    ctx: &Ctx,
    req: pb::DisconnectMcpServerRequest,
) -> Result<pb::DisconnectMcpServerResponse, Status> {
    let name = required("name", &req.name)?;
    // Unknown: NOT_FOUND (the engine would call it invalid input).
    registered(ctx, name)?;
    ctx.engine.mcp().disconnect(name).map_err(status)?;
    Ok(pb::DisconnectMcpServerResponse { success: true })
}

/// `ListMcpServers`: every registered server by name, whether it is
/// connected and enabled, its tool count (0 when not connected) and its
/// last connection error.
pub(crate) async fn list_mcp_servers(
    ctx: &Ctx,
    _req: pb::ListMcpServersRequest,
) -> Result<pb::ListMcpServersResponse, Status> {
    let servers = ctx
        .engine
        .mcp()
        .servers()
        .into_iter()
        .map(|s| pb::McpServerInfo {
            name: s.name,
            connected: s.connected,
            enabled: s.enabled,
            tool_count: u32_of(s.tool_count),
            error: s.last_error,
        })
        .collect();
    Ok(pb::ListMcpServersResponse { servers })
}

/// `GetMcpTools`: the tools of the connected servers (of `server_name`
/// only, when given: `NOT_FOUND` if it is not registered, none if it is
/// not connected), with their JSON Schema as a string.
pub(crate) async fn get_mcp_tools(
    ctx: &Ctx,
    req: pb::GetMcpToolsRequest,
) -> Result<pb::GetMcpToolsResponse, Status> {
    let only = req
        .server_name
        .as_deref()
        .map(str::trim)
        .filter(|name| !name.is_empty());
    if let Some(name) = only {
        // Unknown: NOT_FOUND rather than an empty list.
        registered(ctx, name)?;
    }
    let tools = ctx
        .engine
        .mcp()
        .tools()
        .await
        .into_iter()
        .filter(|t| only.is_none_or(|name| t.server == name))
        .map(|t| pb::McpToolInfo {
            input_schema: t.input_schema.to_string(),
            full_name: t.full_name,
            server_name: t.server,
            tool_name: t.tool,
            description: t.description,
        })
        .collect();
    Ok(pb::GetMcpToolsResponse { tools })
}
