//! Gantry's own HTTP API (`proto-http`) in the binary: the listener of
//! `gantry serve --http-addr` beside the others on the same engine, and
//! `gantry tokens`, which makes and revokes its bearer tokens.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use gantry_core::Engine;
use proto_http::{HttpOptions, Tokens};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::args::Global;

/// How long open HTTP requests get once the engine has stopped.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The HTTP API listener of `gantry serve`, started.
pub(crate) struct HttpApiListener {
    pub addr: std::net::SocketAddr,
    task: JoinHandle<std::io::Result<()>>,
}

impl HttpApiListener {
    /// Binds `addr` and serves the API over `engine` until `stop`, with the
    /// tokens of `data_dir`.
    pub(crate) async fn start(
        engine: &Engine,
        workspace: PathBuf,
        addr: &str,
        data_dir: &Path,
        allowed_hosts: Vec<String>,
        stop: CancellationToken,
    ) -> Result<Self> {
        let listener = crate::listen::tcp(addr, "--http-addr").await?;
        let addr = listener.local_addr()?;
        // The data dir's tokens, whatever the storage backend: they are
        // what `gantry tokens` makes.
        let tokens = Tokens::in_dir(data_dir);
        let options = HttpOptions {
            workspace,
            tokens,
            allowed_hosts,
        };
        let task = tokio::spawn(proto_http::serve(engine.clone(), listener, options, stop));
        Ok(Self { addr, task })
    }

    /// Waits for the server to close (after its stop), a while at most.
    pub(crate) async fn stopped(self) -> Result<()> {
        match tokio::time::timeout(CLOSE_WAIT, self.task).await {
            Ok(Ok(served)) => served.context("HTTP API server"),
            Ok(Err(e)) => bail!("HTTP API server: {e}"),
            Err(_) => Ok(()),
        }
    }
}

/// `gantry tokens`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokensCommand {
    /// Make a token; it is printed once (only its hash is kept).
    ///
    ///   gantry tokens create --name ci --read-only > ci.token
    #[command(verbatim_doc_comment)]
    Create(CreateToken),
    /// List tokens: names, read-only or not, when made.
    List,
    /// Revoke a token: the API refuses it from its next request.
    Revoke {
        /// The token's name.
        #[arg(long)]
        name: String,
    },
}

/// `gantry tokens create`.
#[derive(Debug, Args)]
pub(crate) struct CreateToken {
    /// A unique name, to list and revoke it by.
    #[arg(long)]
    pub name: String,
    /// It may only read (`GET`): list and follow threads, not act on them.
    #[arg(long)]
    pub read_only: bool,
}

/// Runs a `gantry tokens` command on the data dir's tokens (the server
/// need not be stopped: it reads them per request).
pub(crate) fn run(global: &Global, command: TokensCommand) -> Result<ExitCode> {
    let dir = crate::setup::data_dir_path(global)?;
    let tokens = Tokens::in_dir(&dir);
    match command {
        TokensCommand::Create(args) => {
            // First, so a dir that cannot be made says what to do about it.
            crate::setup::create_data_dir(&dir)?;
            let (record, token) = tokens.create(&args.name, args.read_only)?;
            let access = if record.read_only {
                "read-only"
            } else {
                "read-write"
            };
            eprintln!(
                "gantry: token {:?} ({access}) created; it is shown once, keep it:",
                record.name
            );
            println!("{token}");
        }
        TokensCommand::List => {
            for record in tokens.list()? {
                let access = if record.read_only {
                    "read-only"
                } else {
                    "read-write"
                };
                let made = chrono::DateTime::from_timestamp_millis(record.created_at)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default();
                println!("{}\t{access}\t{made}", record.name);
            }
        }
        TokensCommand::Revoke { name } => {
            if !tokens.revoke(&name)? {
                bail!("no token named {name:?}");
            }
            eprintln!("gantry: token {name:?} revoked");
        }
    }
    Ok(ExitCode::SUCCESS)
}
