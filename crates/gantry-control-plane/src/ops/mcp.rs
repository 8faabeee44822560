//! A new thread's MCP servers (0.7.0 runners): what the HTTP API takes,
//! what goes to the runner (`ThreadMcpServer`), and what the store keeps
//! and the API shows: every server's name and how it is reached, but no
//! value that may be a secret (environment values, header values, bearer
//! tokens are sent to the runner and not kept).

use std::collections::BTreeMap;

use gantry_runner_protocol::messages::ThreadMcpServer;
use gantry_runner_protocol::v0_7::thread_mcp_server::TransportConfig;
use gantry_runner_protocol::v0_7::{
    ThreadMcpAuthType, ThreadMcpHeader, ThreadMcpStdioConfig, ThreadMcpStreamableHttpConfig,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, require};

/// One server of `POST /v1/agents/{id}/threads`'s `mcp_servers`: exactly
/// one of `stdio` and `streamable_http`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMcpServer {
    /// Its name (the `<server>` of its tools' names); unique in the thread.
    pub name: String,
    /// Its id for the runner (default: the name).
    pub server_id: Option<String>,
    /// A process the runner starts.
    pub stdio: Option<NewMcpStdio>,
    /// A streamable HTTP endpoint.
    pub streamable_http: Option<NewMcpHttp>,
}

/// A stdio server.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMcpStdio {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment (values may be secrets).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A streamable HTTP server.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMcpHttp {
    pub url: String,
    /// Sent as `Authorization: Bearer ...`.
    pub bearer_token: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for NewMcpServer {
    // Values may be secrets: the name and the transport only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewMcpServer")
            .field("name", &self.name)
            .field("stdio", &self.stdio.is_some())
            .field("streamable_http", &self.streamable_http.is_some())
            .finish()
    }
}

/// What the store keeps of a thread's server and the API shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub(crate) struct McpServerView {
    pub name: String,
    /// `stdio` or `streamable_http`.
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The names of its environment variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The names of its headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// Whether it authenticates with a bearer token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bearer_token: bool,
}

/// The servers checked (names unique and given, one transport each), for
/// the runner and for the store.
pub(crate) fn thread_servers(
    servers: Vec<NewMcpServer>,
) -> Result<(Vec<ThreadMcpServer>, Vec<McpServerView>), ApiError> {
    let mut wire = Vec::with_capacity(servers.len());
    let mut views: Vec<McpServerView> = Vec::with_capacity(servers.len());
    for (i, s) in servers.into_iter().enumerate() {
        let field = |name: &str| format!("mcp_servers[{i}].{name}");
        require(&field("name"), &s.name)?;
        if views.iter().any(|v| v.name == s.name) {
            return Err(ApiError::BadRequest(format!(
                "{}: another server is named {:?}",
                field("name"),
                s.name
            )));
        }
        let headers = |map: &BTreeMap<String, String>| -> Vec<ThreadMcpHeader> {
            map.iter()
                .map(|(key, value)| ThreadMcpHeader {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect()
        };
        let (transport, view) = match (s.stdio, s.streamable_http) {
            (Some(stdio), None) => {
                require(&field("stdio.command"), &stdio.command)?;
                let view = McpServerView {
                    name: s.name.clone(),
                    transport: "stdio".into(),
                    command: Some(stdio.command.clone()),
                    args: stdio.args.clone(),
                    env: stdio.env.keys().cloned().collect(),
                    url: None,
                    headers: Vec::new(),
                    bearer_token: false,
                };
                let transport = TransportConfig::Stdio(ThreadMcpStdioConfig {
                    env_vars: headers(&stdio.env),
                    command: stdio.command,
                    args: stdio.args,
                });
                (transport, view)
            }
            (None, Some(http)) => {
                require(&field("streamable_http.url"), &http.url)?;
                let token = http.bearer_token.filter(|t| !t.trim().is_empty());
                let view = McpServerView {
                    name: s.name.clone(),
                    transport: "streamable_http".into(),
                    command: None,
                    args: Vec::new(),
                    env: Vec::new(),
                    url: Some(http.url.clone()),
                    headers: http.headers.keys().cloned().collect(),
                    bearer_token: token.is_some(),
                };
                let auth_type = if token.is_some() {
                    ThreadMcpAuthType::BearerToken
                } else {
                    ThreadMcpAuthType::None
                };
                let transport = TransportConfig::StreamableHttp(ThreadMcpStreamableHttpConfig {
                    headers: headers(&http.headers),
                    url: http.url,
                    auth_type: auth_type as i32,
                    bearer_token: token,
                });
                (transport, view)
            }
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "mcp_servers[{i}]: give exactly one of stdio and streamable_http"
                )));
            }
        };
        wire.push(ThreadMcpServer {
            server_id: s.server_id.unwrap_or_else(|| s.name.clone()),
            name: s.name,
            transport_config: Some(transport),
        });
        views.push(view);
    }
    Ok((wire, views))
}
