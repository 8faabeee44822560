//! Rome OS's agent runner (`proto-rome`) in the binary: the NDJSON-over-HTTP
//! listener `gantry serve --rome-addr` runs beside the A3S one on the same
//! engine, for the `@gantry/rome-runner` package (clients/rome).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use gantry_core::Engine;
use proto_rome::{Profiles, Rome};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::setup::read_token;

/// How long open requests get once the engine has stopped.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The Rome listener of `gantry serve`, started.
pub(crate) struct RomeListener {
    pub addr: std::net::SocketAddr,
    task: JoinHandle<std::io::Result<()>>,
}

impl RomeListener {
    /// Binds `addr` and serves Rome's runner over `engine` until `stop`.
    pub(crate) async fn start(
        engine: &Engine,
        workspace: PathBuf,
        profiles: Profiles,
        addr: &str,
        token_file: Option<&Path>,
        allowed_hosts: Vec<String>,
        stop: CancellationToken,
    ) -> Result<Self> {
        let token = token_file.map(read_token).transpose()?;
        let listener = crate::listen::tcp(addr, "--rome-addr").await?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && token.is_none() {
            eprintln!(
                "gantry: warning: the Rome runner listening on {addr}, reachable from other \
                 machines, without authentication; pass --rome-token-file"
            );
        }
        let rome = Rome::new(engine.clone(), workspace, profiles);
        let task = tokio::spawn(proto_rome::serve_http(
            rome,
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
            Ok(Ok(served)) => served.context("Rome HTTP server"),
            Ok(Err(e)) => bail!("Rome HTTP server: {e}"),
            Err(_) => Ok(()),
        }
    }
}
