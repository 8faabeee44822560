//! `gantry serve`: the engine behind its protocol listeners, with the
//! scheduler of jobs and the stored MCP servers.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use gantry_core::{Engine, EngineBuilder, EngineConfig, Providers};
use gantry_store::{MemoryStore, Store};
use proto_code_agent::{Listener, ServeOptions, TlsPem};

use tokio_util::sync::CancellationToken;

use crate::args::{Global, ServeArgs, StorageBackend};
use crate::codewhale::{HttpListener, HttpListeners};
use crate::pando::PandoInstances;
use crate::rome::RomeListener;
use crate::setup::{DataDir, read_token};
use crate::signals::stop_signal;
use proto_codewhale::Version;

/// Runs the daemon until a signal or the `Shutdown` rpc.
pub(crate) async fn run(global: Global, args: ServeArgs) -> Result<ExitCode> {
    let providers_config = crate::config::load(global.config.as_deref())?;
    let declared_agents = crate::config::agents(global.config.as_deref())?;
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = std::fs::canonicalize(&workspace)
        .ok()
        .filter(|p| p.is_dir())
        .with_context(|| {
            format!(
                "workspace {} is not an existing directory",
                workspace.display()
            )
        })?;
    let auth_token = match &args.auth_token_file {
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    let unix = args.listen_addr.starts_with("unix:");
    if args.reveal_provider_keys && auth_token.is_none() && !unix {
        anyhow::bail!(
            "--reveal-provider-keys returns keys to authenticated callers only: \
             pass --auth-token-file, or listen on a unix: socket"
        );
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsPem {
            cert: std::fs::read(cert).with_context(|| format!("cannot read {}", cert.display()))?,
            key: std::fs::read(key).with_context(|| format!("cannot read {}", key.display()))?,
        }),
        _ => None,
    };

    // The data dir (and its lock) lives as long as the server.
    let (store, data): (Arc<dyn Store>, Option<DataDir>) = match args.storage_backend {
        StorageBackend::File => {
            let data = DataDir::open(&global, &args.store).await?;
            (data.store.clone(), Some(data))
        }
        StorageBackend::Memory => (Arc::new(MemoryStore::new()), None),
    };
    let data_dir = data.as_ref().map(|d| d.path.clone());
    let protected = crate::setup::sandbox_protected(&global, data.as_ref());
    // Before anything listens: variables that ask for the impossible stop
    // the daemon rather than leave it untraced unnoticed. On the runtime,
    // which outlives the shutdown below: the gRPC exporter's channel runs there.
    let traces = gantry_telemetry::Tracing::from_env()?;
    let engine = daemon_engine(store, providers_config, data_dir, protected, &global, |b| {
        b.max_sandbox(args.max_sandbox.into())
            .max_rounds(args.max_rounds)
            // Exported traces go on into the provider's.
            .propagate_own_traces(traces.is_some())
    })
    .await?;
    start_background_work(&engine);
    let profiles = crate::config::register_agents(&engine, declared_agents).await?;
    let scheduler = engine.jobs().start_scheduler().await?;

    let listener = Listener::bind(&args.listen_addr)
        .await
        .map_err(|e| crate::listen::cannot_listen(&args.listen_addr, "--listen-addr", &e))?;
    // Before the line below: a stop asked for once it is printed is graceful.
    let stop = stop_signal();
    // One stop for every listener: a signal, or the A3S `Shutdown` rpc.
    let stopping = CancellationToken::new();
    let tracing_task = traces
        .as_ref()
        .map(|t| t.trace(engine.clone(), stopping.clone()));
    let codewhale_addrs = [
        (&args.codewhale_addr, "--codewhale-addr", Version::V0_8),
        (&args.codewhale10_addr, "--codewhale10-addr", Version::V0_10),
    ];
    let codewhale = HttpListener::start_all(
        &engine,
        workspace.clone(),
        HttpListeners {
            addrs: codewhale_addrs
                .into_iter()
                .filter_map(|(addr, flag, version)| Some((addr.as_deref()?, flag, version)))
                .collect(),
            token_file: args.codewhale_token_file.as_deref(),
            allowed_hosts: args.allowed_host.clone(),
            config_path: global.config.clone(),
        },
        stopping.clone(),
    )
    .await?;
    let pando = PandoInstances::start(
        &engine,
        &args.pando,
        Duration::from_millis(args.pando_heartbeat_ms),
        stopping.clone(),
    )
    .await?;
    let rome = match &args.rome_addr {
        Some(addr) => Some(
            RomeListener::start(
                &engine,
                workspace.clone(),
                profiles,
                addr,
                args.rome_token_file.as_deref(),
                args.allowed_host.clone(),
                stopping.clone(),
            )
            .await?,
        ),
        None => None,
    };
    let http = match &args.http_addr {
        Some(addr) => Some(
            crate::http::HttpApiListener::start(
                &engine,
                workspace.clone(),
                addr,
                &crate::setup::data_dir_path(&global)?,
                args.allowed_host.clone(),
                stopping.clone(),
            )
            .await?,
        ),
        None => None,
    };
    if let Ok(addr) = listener.address() {
        if !listener.is_local() && auth_token.is_none() {
            eprintln!(
                "gantry: warning: listening on {addr}, reachable from other machines, without \
                 authentication; pass --auth-token-file"
            );
        }
        // The one line scripts wait for (the port, when 0 was asked for).
        eprintln!("gantry: serving a3s.code.agent.v1.CodeAgentService on {addr}");
    }
    for codewhale in &codewhale {
        match codewhale.version {
            Version::V0_8 => eprintln!("gantry: serving CodeWhale HTTP on {}", codewhale.addr),
            Version::V0_10 => {
                eprintln!("gantry: serving CodeWhale 0.10 HTTP on {}", codewhale.addr)
            }
        }
    }
    pando.announce();
    if let Some(rome) = &rome {
        eprintln!("gantry: serving the Rome agent runner on {}", rome.addr);
    }
    if let Some(http) = &http {
        eprintln!(
            "gantry: serving the HTTP API and dashboard on http://{}/",
            http.addr
        );
    }
    let options = ServeOptions {
        workspace,
        auth_token,
        tls,
        reveal_provider_keys: args.reveal_provider_keys,
        grace: Duration::from_secs(args.grace_secs),
        exit_on_shutdown: args.exit_on_shutdown,
    };
    {
        let stopping = stopping.clone();
        tokio::spawn(async move {
            stop.await;
            stopping.cancel();
        });
    }
    let served = proto_code_agent::serve(
        engine,
        listener,
        options,
        stopping.clone().cancelled_owned(),
    )
    .await;
    stopping.cancel();
    for codewhale in codewhale {
        codewhale.stopped().await?;
    }
    pando.stopped().await;
    if let Some(rome) = rome {
        rome.stopped().await?;
    }
    if let Some(http) = http {
        http.stopped().await?;
    }
    // Runs the stop cut off are recorded as cancelled before the store closes.
    scheduler.stop().await;
    if let Some(traces) = traces {
        if let Some(task) = tracing_task {
            let _ = task.await;
        }
        traces.shutdown().await;
    }
    served?;
    drop(data);
    eprintln!("gantry: stopped");
    Ok(ExitCode::SUCCESS)
}

/// The engine a daemon runs: the configured providers over `store`;
/// `sandbox_protected` (the config file, the store's password file) is kept
/// from sandboxed commands like the data dir, and the workspaces the config
/// file and `--trust-workspace` trust are trusted; `customize` adds to the
/// builder.
pub(crate) async fn daemon_engine(
    store: Arc<dyn Store>,
    providers_config: gantry_core::ProvidersConfig,
    data_dir: Option<std::path::PathBuf>,
    sandbox_protected: Vec<std::path::PathBuf>,
    global: &Global,
    customize: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Result<Engine> {
    let trusted_workspaces = crate::config::trusted_workspaces(global)?;
    let providers = Arc::new(Providers::load(store.clone(), providers_config).await?);
    let shell_snapshot = !global.no_shell_snapshot;
    let config = EngineConfig {
        default_model: providers
            .default_model()
            .unwrap_or_else(|| EngineConfig::default().default_model),
        data_dir,
        sandbox_protected,
        shell_snapshot,
        shell_snapshot_ahead: shell_snapshot,
        trusted_workspaces,
        ..EngineConfig::default()
    };
    let builder = EngineBuilder::new(store, providers.clone())
        .providers(providers)
        .config(config);
    Ok(customize(builder).start().await?)
}

/// Connects the stored MCP servers without holding up the listener.
pub(crate) fn start_background_work(engine: &Engine) {
    let engine = engine.clone();
    tokio::spawn(async move {
        if !engine.mcp().servers().is_empty() {
            let summary = engine.mcp().start_servers().await;
            for failure in summary.failed {
                tracing::warn!(server = %failure.server_name, error = %failure.error, "MCP server failed to start");
            }
        }
    });
}
