//! Gantry as a runner under a control plane (`companyhelm.runner.v1`, from
//! `gantry-runner-protocol`, in version 0.2.0 or 0.7.0 as asked): dials the
//! control plane, registers what it offers, serves the requests that come
//! over the control channel with the engine, and reports every agent,
//! thread, turn and item change back. The serving is the same in both
//! versions; `wire` maps it onto the one spoken.
//!
//! An adapter over the engine (`gantry-core`); the control plane it dials
//! is any that speaks the protocol, Gantry's own (`gantry-control-plane`)
//! among them.

mod backoff;
mod catalog;
mod command_env;
mod endpoint;
mod git_skills;
mod github_env;
mod github_tokens;
mod outbox;
mod reports;
mod requests;
mod session;
mod thread_mcp;
mod thread_secrets;
mod wire;

use std::path::PathBuf;
use std::sync::Arc;

use gantry_core::Engine;
use tokio_util::sync::CancellationToken;

pub use backoff::Backoff;
pub use command_env::RunnerCommandEnv;
pub use endpoint::ControlPlaneUrl;
pub use gantry_runner_protocol::ProtocolVersion;
pub use github_tokens::{GithubTokens, git_env};
pub use thread_secrets::CLI_SECRET_ENV;

use outbox::{Outbox, Unconfirmed};
use reports::Followers;
use requests::Handler;
use session::Session;

/// How to reach the control plane and where threads work.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// The control plane (`http(s)://host:port[/prefix]`).
    pub url: ControlPlaneUrl,
    /// Other replicas of the same control plane: when a channel breaks or
    /// cannot be opened, the runner dials the next URL in turn (`url`
    /// first, then these, then `url` again), and reports what ran meanwhile.
    pub failover: Vec<ControlPlaneUrl>,
    /// The protocol version to speak.
    pub protocol: ProtocolVersion,
    /// The runner's secret, sent as a bearer token on every call.
    pub token: String,
    /// Extra CA certificate (PEM) to trust for a TLS control plane.
    pub ca_pem: Option<Vec<u8>>,
    /// Each thread gets its own directory under this one.
    pub workspaces: PathBuf,
    /// Reconnect delays.
    pub backoff: Backoff,
    /// What a thread's commands get in their environment (its CLI
    /// secret, GitHub tokens); the same source must be given to the engine
    /// ([`gantry_core::EngineBuilder::command_env_source`]). Without it,
    /// commands get neither.
    pub command_env: Option<Arc<RunnerCommandEnv>>,
}

/// Why the runner stopped before it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The control plane refused the runner's token.
    #[error("the control plane refused this runner ({0}); check the token")]
    Refused(String),
    /// The workspaces directory cannot be used.
    #[error("workspaces directory {path}: {error}")]
    Workspaces {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
}

/// Runs the runner until `shutdown` is cancelled, reconnecting whenever the
/// channel drops; threads created under earlier runs are reported again.
pub async fn run(
    engine: Engine,
    options: RunnerOptions,
    shutdown: CancellationToken,
) -> Result<(), RunnerError> {
    tokio::fs::create_dir_all(&options.workspaces)
        .await
        .map_err(|error| RunnerError::Workspaces {
            path: options.workspaces.clone(),
            error,
        })?;
    let (outbox, queued) = Outbox::new();
    let handler = Handler {
        engine: engine.clone(),
        workspaces: options.workspaces,
        outbox: outbox.clone(),
        followers: Followers::new(options.protocol),
        command_env: options.command_env.clone(),
    };
    // Beside the session: restating threads may fill the outbox, which
    // only the session drains.
    tokio::spawn(follow_existing_threads(handler.clone()));
    let mut urls = vec![options.url];
    urls.extend(options.failover);
    let session = Session {
        urls,
        current: 0,
        protocol: options.protocol,
        token: options.token,
        ca_pem: options.ca_pem,
        backoff: options.backoff,
        command_env: options.command_env,
        handler,
        outbox: queued,
        unconfirmed: Unconfirmed::default(),
    };
    session.run(shutdown).await
}

/// The runner's threads from earlier runs (threads of an agent, not
/// archived) are followed again, so their turns are reported, each first
/// saying where its last turn stands.
async fn follow_existing_threads(handler: Handler) {
    let mut query = gantry_core::ThreadQuery {
        archived: Some(false),
        ..Default::default()
    };
    loop {
        let page = match handler.engine.threads().list(&query).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list threads to follow");
                return;
            }
        };
        for thread in page.threads.iter().filter(|t| t.agent_id.is_some()) {
            start_thread_mcp_servers(&handler.engine, &thread.id);
            handler
                .followers
                .resume(&handler.engine, &thread.id, &handler.outbox)
                .await;
        }
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return,
        }
    }
}

/// Connects a thread's own MCP servers (kept by the engine across runs) in
/// the background, so its next turns have their tools again.
fn start_thread_mcp_servers(engine: &Engine, thread: &gantry_types::ThreadId) {
    if engine.mcp().thread_servers(thread).is_empty() {
        return;
    }
    let (engine, thread) = (engine.clone(), thread.clone());
    tokio::spawn(async move {
        let summary = engine.mcp().start_thread_servers(&thread).await;
        for failed in summary.failed {
            tracing::warn!(thread = %thread, server = %failed.server_name, error = %failed.error, "a thread's MCP server did not start again");
        }
    });
}
