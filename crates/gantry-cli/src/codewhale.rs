//! CodeWhale (`proto-codewhale`) in the binary: the HTTP listeners of
//! `gantry serve --codewhale-addr` (the seed's 0.8.59) and
//! `--codewhale10-addr` (0.10.2) run beside the A3S one on the same engine,
//! sharing one CodeWhale (its defaults, its questions); `gantry codewhale
//! --stdio [--protocol 0.10]`, JSON-RPC on stdin/stdout.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use gantry_core::Engine;
use gantry_store::{MemoryStore, Store};
use proto_codewhale::{CodeWhale, Version};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::args::{Global, StorageBackend};
use crate::setup::{DataDir, read_token};

/// How long open HTTP requests get once the engine has stopped.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// `gantry codewhale`.
#[derive(Debug, Args)]
pub(crate) struct CodewhaleArgs {
    #[command(flatten)]
    pub store: crate::args::StoreArg,

    /// Speak newline-delimited JSON-RPC 2.0 on stdin/stdout (the only
    /// transport of this command; HTTP is `gantry serve --codewhale-addr`).
    #[arg(long, required = true)]
    pub stdio: bool,

    /// Workspace of threads that name none [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// `file`: the store `--store` names (by default the SQLite file in the
    /// data dir); `memory`: nothing written.
    #[arg(long, value_enum, default_value = "file")]
    pub storage_backend: StorageBackend,

    /// The CodeWhale version to speak: 0.8.59 (the seed's) or 0.10.2
    /// (today's: thread creations carry an `operation_key`, a message is
    /// answered when its turn ends).
    #[arg(long, value_name = "VERSION", default_value = "0.8.59")]
    pub protocol: Version,
}

/// A CodeWhale HTTP listener of `gantry serve`, started.
pub(crate) struct HttpListener {
    pub addr: std::net::SocketAddr,
    pub version: Version,
    task: JoinHandle<std::io::Result<()>>,
}

/// Where `gantry serve` listens for CodeWhale, and what they share.
pub(crate) struct HttpListeners<'a> {
    /// Each listener's address, the flag that named it and its version.
    pub addrs: Vec<(&'a str, &'static str, Version)>,
    pub token_file: Option<&'a Path>,
    pub allowed_hosts: Vec<String>,
    pub config_path: Option<PathBuf>,
}

impl HttpListener {
    /// Binds each of `listeners` and serves CodeWhale over `engine` until
    /// `stop`, every listener on one CodeWhale.
    pub(crate) async fn start_all(
        engine: &Engine,
        workspace: PathBuf,
        listeners: HttpListeners<'_>,
        stop: CancellationToken,
    ) -> Result<Vec<Self>> {
        if listeners.addrs.is_empty() {
            return Ok(Vec::new());
        }
        let token = listeners.token_file.map(read_token).transpose()?;
        let cw = CodeWhale::open(engine.clone(), workspace)
            .await
            .context("CodeWhale's stored settings")?;
        if let Some(path) = listeners.config_path {
            cw.set_config_path(path);
        }
        if token.is_none() {
            // Whoever reaches a listener without a token may not re-point a
            // provider (and send its key) elsewhere.
            cw.lock_providers();
        }
        let mut started = Vec::new();
        for (addr, flag, version) in listeners.addrs {
            let listener = crate::listen::tcp(addr, flag).await?;
            let addr = listener.local_addr()?;
            if !addr.ip().is_loopback() && token.is_none() {
                eprintln!(
                    "gantry: warning: CodeWhale listening on {addr}, reachable from other \
                     machines, without authentication; pass --codewhale-token-file"
                );
            }
            let task = tokio::spawn(proto_codewhale::serve_http(
                cw.clone(),
                version,
                listener,
                token.clone(),
                listeners.allowed_hosts.clone(),
                stop.clone(),
            ));
            started.push(Self {
                addr,
                version,
                task,
            });
        }
        Ok(started)
    }

    /// Waits for the server to close (after its stop), a while at most.
    pub(crate) async fn stopped(self) -> Result<()> {
        match tokio::time::timeout(CLOSE_WAIT, self.task).await {
            Ok(Ok(served)) => served.context("CodeWhale HTTP server"),
            Ok(Err(e)) => bail!("CodeWhale HTTP server: {e}"),
            Err(_) => Ok(()),
        }
    }
}

/// `gantry codewhale --stdio`: until `shutdown` or the end of stdin.
pub(crate) async fn run(global: Global, args: CodewhaleArgs) -> Result<ExitCode> {
    let providers_config = crate::config::load(global.config.as_deref())?;
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
    let (store, data): (Arc<dyn Store>, Option<DataDir>) = match args.storage_backend {
        StorageBackend::File => {
            let data = DataDir::open(&global, &args.store).await?;
            (data.store.clone(), Some(data))
        }
        StorageBackend::Memory => (Arc::new(MemoryStore::new()), None),
    };
    let data_dir = data.as_ref().map(|d| d.path.clone());
    let protected = crate::setup::sandbox_protected(&global, data.as_ref());
    let engine =
        crate::serve::daemon_engine(store, providers_config, data_dir, protected, &global, |b| b)
            .await?;
    crate::serve::start_background_work(&engine);
    let cw = CodeWhale::open(engine.clone(), workspace)
        .await
        .context("CodeWhale's stored settings")?;
    if let Some(path) = global.config.clone() {
        cw.set_config_path(path);
    }
    let served =
        proto_codewhale::serve_stdio(cw, args.protocol, tokio::io::stdin(), tokio::io::stdout())
            .await;
    // Turns still running end interrupted, their events saved.
    if let Err(e) = engine.shutdown().await {
        tracing::error!(error = %e, "stopping with events not saved");
    }
    served.context("stdio")?;
    drop(data);
    Ok(ExitCode::SUCCESS)
}
