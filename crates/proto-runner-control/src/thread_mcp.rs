//! A 0.7.0 thread's `mcp_servers` as the engine's MCP server configs: a
//! stdio server runs in the thread's workspace with its `env_vars`; a
//! streamable HTTP one gets its headers, and its bearer token (when
//! `auth_type` says so) as `Authorization`. The engine gives their tools
//! to that thread's turns only.

use std::collections::BTreeMap;
use std::path::Path;

use gantry_runner_protocol::messages::ThreadMcpServer;
use gantry_runner_protocol::v0_7::ThreadMcpAuthType;
use gantry_runner_protocol::v0_7::thread_mcp_server::TransportConfig;
use gantry_types::mcp::{McpServerConfig, McpTransport};

/// How long one of a thread's servers may take to start: the thread's
/// answer waits for its servers, and the control plane for the answer.
const STARTUP_TIMEOUT_MS: u64 = 10_000;

/// The engine's configs for the thread's servers, checked: names must be
/// unique (they name the tools), a stdio server needs a command, an HTTP
/// one an `http(s)://` URL. Messages name the server, never a value.
pub(crate) fn configs(
    servers: &[ThreadMcpServer],
    workspace: &Path,
) -> Result<Vec<McpServerConfig>, String> {
    let mut out: Vec<McpServerConfig> = Vec::with_capacity(servers.len());
    for server in servers {
        let name = server.name.trim();
        if out.iter().any(|c| c.name == name) {
            return Err(format!("mcp_servers: two servers are named {name:?}"));
        }
        let transport = match &server.transport_config {
            None => {
                return Err(format!(
                    "mcp_servers: server {name:?} has no transport (stdio or streamable_http)"
                ));
            }
            Some(TransportConfig::Stdio(stdio)) => {
                let env = pairs(&stdio.env_vars, name, "env_vars")?;
                if let Some(bad) = env.keys().find(|k| k.contains(['=', '\0'])) {
                    return Err(format!(
                        "mcp_servers: server {name:?}: {bad:?} is not an environment variable name"
                    ));
                }
                McpTransport::Stdio {
                    command: stdio.command.clone(),
                    args: stdio.args.clone(),
                    env,
                    cwd: Some(workspace.to_path_buf()),
                }
            }
            Some(TransportConfig::StreamableHttp(http)) => {
                let url = http.url.trim();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "mcp_servers: server {name:?}: the url is not http:// or https://"
                    ));
                }
                let mut headers = pairs(&http.headers, name, "headers")?;
                if http.auth_type == ThreadMcpAuthType::BearerToken as i32 {
                    let token = http
                        .bearer_token
                        .as_deref()
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| {
                            format!(
                                "mcp_servers: server {name:?} uses a bearer token but sent none"
                            )
                        })?;
                    headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
                }
                McpTransport::Http {
                    url: url.to_owned(),
                    headers,
                    bearer_token_env: None,
                }
            }
        };
        let mut config = McpServerConfig::new(name, transport);
        config.startup_timeout_ms = STARTUP_TIMEOUT_MS;
        out.push(config);
    }
    Ok(out)
}

/// Key/value pairs (`ThreadMcpHeader`), keys unique.
fn pairs(
    entries: &[gantry_runner_protocol::v0_7::ThreadMcpHeader],
    server: &str,
    field: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for entry in entries {
        if entry.value.contains('\0')
            || out.insert(entry.key.clone(), entry.value.clone()).is_some()
        {
            return Err(format!(
                "mcp_servers: server {server:?}: {field} {:?} is repeated or holds a NUL",
                entry.key
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_runner_protocol::v0_7::{
        ThreadMcpHeader, ThreadMcpStdioConfig, ThreadMcpStreamableHttpConfig,
    };

    fn server(name: &str, transport: TransportConfig) -> ThreadMcpServer {
        ThreadMcpServer {
            server_id: format!("id-{name}"),
            name: name.to_owned(),
            transport_config: Some(transport),
        }
    }

    #[test]
    fn stdio_servers_run_in_the_workspace_and_http_ones_carry_their_token() {
        let servers = [
            server(
                "everything",
                TransportConfig::Stdio(ThreadMcpStdioConfig {
                    command: "node".into(),
                    args: vec!["server.js".into()],
                    env_vars: vec![ThreadMcpHeader {
                        key: "API_KEY".into(),
                        value: "k".into(),
                    }],
                }),
            ),
            server(
                "remote",
                TransportConfig::StreamableHttp(ThreadMcpStreamableHttpConfig {
                    url: "https://mcp.example.com/mcp".into(),
                    auth_type: ThreadMcpAuthType::BearerToken as i32,
                    bearer_token: Some("tok".into()),
                    headers: vec![],
                }),
            ),
        ];
        let configs = configs(&servers, Path::new("/ws/t1")).unwrap();
        match &configs[0].transport {
            McpTransport::Stdio { env, cwd, .. } => {
                assert_eq!(env["API_KEY"], "k");
                assert_eq!(cwd.as_deref(), Some(Path::new("/ws/t1")));
            }
            other => panic!("{other:?}"),
        }
        match &configs[1].transport {
            McpTransport::Http { headers, .. } => {
                assert_eq!(headers["Authorization"], "Bearer tok")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicate_names_and_missing_tokens_are_refused_without_values() {
        let stdio = || {
            TransportConfig::Stdio(ThreadMcpStdioConfig {
                command: "x".into(),
                ..Default::default()
            })
        };
        let err = configs(
            &[server("a", stdio()), server("a", stdio())],
            Path::new("/w"),
        )
        .unwrap_err();
        assert!(err.contains("two servers are named \"a\""), "{err}");
        let no_token = server(
            "r",
            TransportConfig::StreamableHttp(ThreadMcpStreamableHttpConfig {
                url: "http://127.0.0.1:1/mcp".into(),
                auth_type: ThreadMcpAuthType::BearerToken as i32,
                bearer_token: None,
                headers: vec![],
            }),
        );
        let err = configs(&[no_token], Path::new("/w")).unwrap_err();
        assert!(err.contains("bearer token"), "{err}");
    }
}
