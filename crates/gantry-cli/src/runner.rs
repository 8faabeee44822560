//! `gantry runner`: Gantry as a runner under a control plane
//! (`companyhelm.runner.v1`): it dials out, registers the models it serves,
//! and runs the agents, threads and messages the control plane sends.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use proto_runner_control::{
    self as runner, Backoff, ControlPlaneUrl, ProtocolVersion, RunnerCommandEnv, RunnerOptions,
};
use tokio_util::sync::CancellationToken;

use crate::args::Global;
use crate::serve::{daemon_engine, start_background_work};
use crate::setup::{DataDir, read_token};
use crate::signals::stop_signal;

/// Examples shown under `--help`.
pub(crate) const EXAMPLES: &str = "\
Examples:
  # On the control plane: allow the runner, keep its token.
  gantry control-plane add-runner builder-1 > builder-1.token

  # On the runner's machine: dial the control plane and serve it.
  gantry runner --control-plane http://cp.internal:7400 --token-file builder-1.token

  # Behind a reverse proxy that routes /runners/ to the control plane:
  gantry runner --control-plane https://cp.example.com/runners --token-file builder-1.token

  # Under a control plane of CompanyHelm's current protocol (0.5.x-0.7.0):
  gantry runner --protocol 0.7 --control-plane http://cp.internal:7400 --token-file builder-1.token

  # ... whose threads' git and gh commands use the token in a file:
  gantry runner --protocol 0.7 --github-token-file gh.token --control-plane http://cp.internal:7400 --token-file builder-1.token

The models offered are the configured providers' (see --config); each thread
works in its own directory under --workspaces. The runner reconnects with
backoff when the channel drops and reports what ran meanwhile; Ctrl-C stops it.";

/// `gantry runner`.
#[derive(Debug, Args)]
pub(crate) struct RunnerArgs {
    #[command(flatten)]
    pub store: crate::args::StoreArg,

    /// The control plane: `http(s)://HOST:PORT[/PREFIX]`. `http://` and
    /// loopback hosts are plaintext, anything else TLS; a path prefixes
    /// every rpc path. Several replicas: `URL1,URL2,...`; when the channel
    /// to one breaks (or a draining one refuses), the runner dials the next
    /// and reports what ran meanwhile.
    #[arg(long, env = "GANTRY_CONTROL_PLANE", value_name = "URL[,URL...]")]
    pub control_plane: String,

    /// File whose first line is this runner's token (sent as
    /// `authorization: Bearer <token>` on every call).
    #[arg(long, env = "GANTRY_RUNNER_TOKEN_FILE", value_name = "FILE")]
    pub token_file: PathBuf,

    /// Each thread works in its own directory under this one
    /// [default: DATA_DIR/workspaces].
    #[arg(long, value_name = "DIR")]
    pub workspaces: Option<PathBuf>,

    /// CA certificate (PEM) to trust for a TLS control plane, besides the
    /// web's root certificates.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,

    /// The companyhelm.runner.v1 version to speak: `0.2` (0.2.0, the
    /// seed's: agents, the runner picks thread ids, GitHub tokens from the
    /// control plane) or `0.7` (0.7.0, CompanyHelm's today, 0.5.x alike:
    /// no agents, the control plane picks thread ids, heartbeats,
    /// interrupts, thread names and token usage, no GitHub rpcs).
    #[arg(
        long,
        env = "GANTRY_RUNNER_PROTOCOL",
        value_name = "VERSION",
        default_value = "0.2"
    )]
    pub protocol: ProtocolVersion,

    /// File whose first line is a GitHub token for the threads' `git` and
    /// `gh` commands (as `GH_TOKEN`, `GITHUB_TOKEN` and git's
    /// `http.extraheader`, in those commands' environment only). Read again
    /// whenever it changes, so whatever rotates the token just rewrites the
    /// file. Replaces the control plane's installation tokens (0.2), and is
    /// the way to give 0.7 threads a token (0.7.0 has no GitHub rpcs).
    #[arg(long, env = "GANTRY_GITHUB_TOKEN_FILE", value_name = "FILE")]
    pub github_token_file: Option<PathBuf>,
}

/// Runs the runner until SIGINT/SIGTERM, or until the control plane
/// refuses its token.
pub(crate) async fn run(global: Global, args: RunnerArgs) -> Result<ExitCode> {
    let mut urls = ControlPlaneUrl::parse_list(&args.control_plane).map_err(anyhow::Error::msg)?;
    let url = urls.remove(0);
    let token = read_token(&args.token_file)?;
    let ca_pem = match &args.tls_ca {
        Some(path) => {
            Some(std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?)
        }
        None => None,
    };
    let providers_config = crate::config::load(global.config.as_deref())?;
    let data = DataDir::open(&global, &args.store).await?;
    let workspaces = args
        .workspaces
        .clone()
        .unwrap_or_else(|| data.path.join("workspaces"));
    // Threads' CLI secrets (0.7) live beside the store, never in it.
    let command_env = RunnerCommandEnv::new(Some(data.path.join("runner-secrets")));
    let command_env = match (&args.github_token_file, args.protocol) {
        (Some(file), _) => command_env.github_token_file(file.clone()),
        (None, ProtocolVersion::V0_2) => command_env.github_from_control_plane(),
        (None, ProtocolVersion::V0_7) => command_env,
    }
    .shared();
    let source = command_env.clone();
    let engine = daemon_engine(
        data.store.clone(),
        providers_config,
        Some(data.path.clone()),
        crate::setup::sandbox_protected(&global, Some(&data)),
        &global,
        move |builder| builder.command_env_source(source),
    )
    .await?;
    start_background_work(&engine);

    eprintln!(
        "gantry: runner dialing {} (protocol {})",
        args.control_plane, args.protocol
    );
    let stop = CancellationToken::new();
    let options = RunnerOptions {
        url,
        failover: urls,
        protocol: args.protocol,
        token,
        ca_pem,
        workspaces,
        backoff: Backoff::default(),
        command_env: Some(command_env),
    };
    // Handlers before the runner starts (and says it dials).
    let signal = stop_signal();
    let running = tokio::spawn(runner::run(engine.clone(), options, stop.clone()));
    let signalled = stop.clone();
    tokio::spawn(async move {
        signal.await;
        signalled.cancel();
    });
    let result = running.await.context("the runner task failed")?;
    if let Err(e) = engine.shutdown().await {
        tracing::error!(error = %e, "stopping with events not saved");
    }
    drop(data);
    result?;
    eprintln!("gantry: stopped");
    Ok(ExitCode::SUCCESS)
}
