//! CodeWhale (`proto-codewhale`) in the binary: the HTTP listener `gantry
//! serve --codewhale-addr` runs beside the A3S one on the same engine, and
//! `gantry codewhale --stdio`, JSON-RPC on stdin/stdout.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use gantry_core::Engine;
use gantry_store::{MemoryStore, Store};
use proto_codewhale::CodeWhale;
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
}

/// The CodeWhale HTTP listener of `gantry serve`, started.
pub(crate) struct HttpListener {
    pub addr: std::net::SocketAddr,
    task: JoinHandle<std::io::Result<()>>,
}

impl HttpListener {
    /// Binds `addr` and serves CodeWhale over `engine` until `stop`.
    pub(crate) async fn start(
        engine: &Engine,
        workspace: PathBuf,
        addr: &str,
        token_file: Option<&Path>,
        allowed_hosts: Vec<String>,
        config_path: Option<PathBuf>,
        stop: CancellationToken,
    ) -> Result<Self> {
        let token = token_file.map(read_token).transpose()?;
        let listener = crate::listen::tcp(addr, "--codewhale-addr").await?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && token.is_none() {
            eprintln!(
                "gantry: warning: CodeWhale listening on {addr}, reachable from other machines, \
                 without authentication; pass --codewhale-token-file"
            );
        }
        let cw = CodeWhale::open(engine.clone(), workspace)
            .await
            .context("CodeWhale's stored settings")?;
        if let Some(path) = config_path {
            cw.set_config_path(path);
        }
        if token.is_none() {
            // Whoever reaches a listener without a token may not re-point a
            // provider (and send its key) elsewhere.
            cw.lock_providers();
        }
        let task = tokio::spawn(proto_codewhale::serve_http(
            cw,
            listener,
            token,
            allowed_hosts,
            stop,
        ));
        Ok(Self { addr, task })
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
    let served = proto_codewhale::serve_stdio(cw, tokio::io::stdin(), tokio::io::stdout()).await;
    // Turns still running end interrupted, their events saved.
    if let Err(e) = engine.shutdown().await {
        tracing::error!(error = %e, "stopping with events not saved");
    }
    served.context("stdio")?;
    drop(data);
    Ok(ExitCode::SUCCESS)
}
