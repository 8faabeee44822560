//! Opening one connection to an MCP server with `rmcp`: a child process
//! speaking JSON-RPC on stdio, or streamable HTTP.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, Once};

use rmcp::model::Tool as RmcpTool;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{McpServerConfig, McpTransport};

/// Lines of a stdio server's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 8;

/// A live, initialized connection with the server's tool list.
pub(crate) struct Connection {
    /// The rmcp client; calls go through it concurrently (`&self`).
    pub service: RunningService<RoleClient, ()>,
    /// The tools the server listed when we connected.
    pub tools: Vec<RmcpTool>,
    /// The last lines a stdio server wrote to stderr: the usual place a
    /// crashing server says why.
    stderr_tail: Option<Arc<Mutex<VecDeque<String>>>>,
}

impl Connection {
    /// Whether the connection is gone (process exited, stream closed, or
    /// we closed it).
    pub(super) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// `msg` with the server's last stderr line appended, when there is one.
    pub(super) fn explain(&self, msg: String) -> String {
        with_stderr(msg, self.stderr_tail.as_ref())
    }

    /// Stops the client; for stdio this kills the server process (rmcp's
    /// child guard kills it when the transport is dropped).
    pub(super) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

fn with_stderr(msg: String, tail: Option<&Arc<Mutex<VecDeque<String>>>>) -> String {
    let last = tail
        .and_then(|t| t.lock().ok().map(|t| t.iter().cloned().collect::<Vec<_>>()))
        .unwrap_or_default();
    if last.is_empty() {
        msg
    } else {
        format!("{msg}; server stderr: {}", last.join(" | "))
    }
}

/// Connects to the server `cfg` describes, performs the MCP handshake and
/// lists its tools. Errors are messages for status and the model.
pub(crate) async fn connect(cfg: &McpServerConfig) -> Result<Connection, String> {
    match &cfg.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            // Gantry's environment minus its keys; the server's configured
            // variables pass as given.
            crate::sandbox::child_env::apply(cmd.as_std_mut(), env);
            // Not the runtime's /proc: the model drives what it runs.
            crate::sandbox::isolate(cmd.as_std_mut());
            cmd.args(args);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            // stderr is piped and drained into a small tail rather than
            // inherited (noise in the user's terminal) or ignored (it is
            // where a failing server explains itself).
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("failed to start `{command}`: {e}"))?;
            let tail = stderr.map(|stderr| {
                let tail = Arc::new(Mutex::new(VecDeque::new()));
                let sink = tail.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if let Ok(mut t) = sink.lock() {
                            if t.len() == STDERR_TAIL_LINES {
                                t.pop_front();
                            }
                            t.push_back(line);
                        }
                    }
                });
                tail
            });
            match ().serve(transport).await {
                Ok(service) => finish(service, tail).await,
                Err(e) => Err(with_stderr(
                    format!("MCP handshake failed: {e}"),
                    tail.as_ref(),
                )),
            }
        }
        McpTransport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env {
                // A token for this server only: keep it from the commands.
                crate::sandbox::child_env::hide(var);
                let token = std::env::var(var)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        format!("environment variable `{var}` (the bearer token) is not set")
                    })?;
                // rmcp adds the `Bearer ` prefix itself.
                config = config.auth_header(token);
            }
            let mut custom = HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::try_from(k.as_str())
                    .map_err(|e| format!("invalid header name `{k}`: {e}"))?;
                let value = http::HeaderValue::try_from(v.as_str())
                    .map_err(|e| format!("invalid value for header `{k}`: {e}"))?;
                custom.insert(name, value);
            }
            config = config.custom_headers(custom);
            install_crypto_provider();
            let transport = StreamableHttpClientTransport::from_config(config);
            match ().serve(transport).await {
                Ok(service) => finish(service, None).await,
                Err(e) => Err(format!("MCP handshake with {url} failed: {e}")),
            }
        }
    }
}

/// Installs ring as rustls' process-wide crypto provider (as gantry-llm
/// does): the workspace builds reqwest with `rustls-no-provider`, and
/// rmcp's reqwest client panics when built with no provider installed,
/// even for plain `http://`.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Lists the tools of a freshly initialized client.
async fn finish(
    service: RunningService<RoleClient, ()>,
    stderr_tail: Option<Arc<Mutex<VecDeque<String>>>>,
) -> Result<Connection, String> {
    let conn = Connection {
        service,
        tools: Vec::new(),
        stderr_tail,
    };
    match conn.service.peer().list_all_tools().await {
        Ok(tools) => Ok(Connection { tools, ..conn }),
        Err(e) => {
            let msg = conn.explain(format!("listing tools failed: {e}"));
            conn.close();
            Err(msg)
        }
    }
}
