//! The client's MCP servers as the thread's own (offered to its turns
//! only): connected before `session/new` or `session/load` answers, so the
//! first prompt has their tools.

use std::collections::BTreeMap;

use gantry_core::Engine;
use gantry_types::ThreadId;
use gantry_types::mcp::{McpServerConfig, McpTransport};

use crate::rpc::RpcError;
use crate::session::engine_error;
use crate::wire::McpServer;

/// Gives `thread` the client's servers and connects them; a server that
/// fails to start is logged, not fatal (the session works without it).
pub(crate) async fn connect(
    engine: &Engine,
    thread: &ThreadId,
    servers: &[McpServer],
) -> Result<(), RpcError> {
    if servers.is_empty() {
        return Ok(());
    }
    let configs = servers.iter().map(config).collect();
    engine
        .mcp()
        .set_thread_servers(thread, configs)
        .await
        .map_err(engine_error)?;
    let summary = engine.mcp().start_thread_servers(thread).await;
    for failed in summary.failed {
        tracing::warn!(
            server = failed.server_name,
            error = failed.error,
            "MCP server did not start"
        );
    }
    Ok(())
}

fn config(server: &McpServer) -> McpServerConfig {
    let pairs = |list: &[crate::wire::NameValue]| {
        list.iter()
            .map(|p| (p.name.clone(), p.value.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    match server {
        McpServer::Stdio(s) => McpServerConfig::new(
            s.name.clone(),
            McpTransport::Stdio {
                command: s.command.clone(),
                args: s.args.clone(),
                env: pairs(&s.env),
                cwd: None,
            },
        ),
        McpServer::Remote(r) => McpServerConfig::new(
            r.name.clone(),
            McpTransport::Http {
                url: r.url.clone(),
                headers: pairs(&r.headers),
                bearer_token_env: None,
            },
        ),
    }
}
