//! `gantry acp`: an Agent Client Protocol agent (`proto-acp`) on
//! stdin/stdout, on an engine of its own over the data dir's store, with
//! the model options of `gantry exec`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use gantry_core::{EngineBuilder, EngineConfig, Providers};
use gantry_tools::SandboxSupport;
use proto_acp::AcpOptions;

use crate::args::Global;
use crate::setup::DataDir;

/// Examples under `gantry acp --help`.
pub(crate) const EXAMPLES: &str = "\
Examples:
  gantry acp                                   # the config's default model
  gantry acp --model anthropic/claude-sonnet-4-5 --reasoning high
  gantry acp --base-url http://localhost:11434/v1 --model qwen3-coder
  gantry acp --model scripted:examples/demo.json   # no key, no network";

/// `gantry acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    pub store: crate::args::StoreArg,

    /// Model of new sessions: `PROVIDER/MODEL` or a plain id with a config
    /// file, or `scripted:FILE` for the deterministic scripted model
    /// (no key, no network). A client may switch it per session (the
    /// `model` config option) [default: the config's default_model, else
    /// gpt-4.1].
    #[arg(long, short, env = "GANTRY_MODEL")]
    pub model: Option<String>,

    /// Base URL of an OpenAI-compatible server (with or without the
    /// trailing /v1); bypasses the config's providers.
    #[arg(long, env = "GANTRY_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,

    /// Environment variable that holds the API key.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub api_key_env: String,

    #[command(flatten)]
    pub server: crate::args::ServerArgs,

    /// Reasoning effort of new sessions, for models that support it (a
    /// client may change it: the `reasoning` config option).
    #[arg(long, value_name = "LEVEL", value_parser = ["minimal", "low", "medium", "high"])]
    pub reasoning: Option<String>,

    /// Model rounds a prompt may take before it stops (`max_turn_requests`).
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub max_rounds: u32,

    /// Retries of a failed model request (rate limits, 5xx, unreachable server).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_retries: u32,

    /// OS sandbox for the agent's shell commands (the `read-only` session
    /// mode always makes it read-only): `workspace-write` (writes only in
    /// the workspace and the temp dir, no network), `read-only`, or
    /// `danger-full-access` (no sandbox). Commands a client runs in its
    /// own terminals are the client's to confine.
    #[arg(long, value_name = "MODE", default_value = "workspace-write", env = "GANTRY_SANDBOX",
          value_parser = ["read-only", "workspace-write", "danger-full-access"])]
    pub sandbox: String,
}

impl crate::model::ModelFlags for AcpArgs {
    fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }
    fn api_key_env(&self) -> &str {
        &self.api_key_env
    }
    fn max_retries(&self) -> u32 {
        self.max_retries
    }
    fn server(&self) -> &crate::args::ServerArgs {
        &self.server
    }
}

/// Serves ACP until the client closes stdin.
pub(crate) async fn run(global: Global, args: AcpArgs) -> Result<ExitCode> {
    let mut file = crate::config::load(global.config.as_deref())?;
    file.retry.max_retries = args.max_retries;
    // A harness starts `gantry acp` with nothing but the environment.
    crate::config::providers_from_env(&mut file, args.base_url.as_deref());
    let data = DataDir::open(&global, &args.store).await?;
    let registry = Arc::new(Providers::load(data.store.clone(), file).await?);
    let chosen =
        crate::model::Chosen::new(args.model.as_deref(), &registry, global.config.as_deref());
    let models = crate::model::setup(&chosen, &args, registry)?;
    let model = chosen.id;
    let sandbox = crate::exec::sandbox_mode(&args.sandbox);
    // Never pretend: a sandbox the kernel cannot enforce is an error.
    let support = SandboxSupport::probe();
    support.check(sandbox).map_err(|e| {
        anyhow::anyhow!("{e}; pass --sandbox danger-full-access to run without a sandbox")
    })?;
    crate::exec::warn_without_namespaces(&support, sandbox);
    // Workspaces come with each session; the temp dir is checked now.
    crate::exec::check_data_dir_exposure(
        &support,
        sandbox,
        &data.path,
        None,
        global.allow_exposed_data_dir,
    )?;
    let config = EngineConfig {
        max_rounds: args.max_rounds.max(1),
        default_model: model,
        reasoning: args.reasoning.clone(),
        data_dir: Some(data.path.clone()),
        sandbox_protected: crate::setup::sandbox_protected(&global, Some(&data)),
        shell_snapshot: !global.no_shell_snapshot,
        shell_snapshot_ahead: !global.no_shell_snapshot,
        trusted_workspaces: crate::config::trusted_workspaces(&global)?,
        ..EngineConfig::default()
    };
    // The client's fs and terminal serve the tools once it offers them.
    let client_tools = proto_acp::ClientTools::new();
    let mut builder = EngineBuilder::new(data.store.clone(), models.resolver.clone())
        .config(config)
        .tool_host_source(client_tools.clone());
    if let Some(registry) = &models.registry {
        builder = builder.providers(registry.clone());
    }
    let engine = builder.start().await?;
    crate::serve::start_background_work(&engine);
    let options = AcpOptions {
        sandbox,
        reasoning: args.reasoning.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        client_tools: Some(client_tools),
    };
    let served = proto_acp::serve_stdio(
        engine.clone(),
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await;
    // Turns still running end interrupted, their events saved.
    if let Err(e) = engine.shutdown().await {
        tracing::error!(error = %e, "stopping with events not saved");
    }
    served.context("stdio")?;
    drop(models);
    drop(data);
    Ok(ExitCode::SUCCESS)
}
