//! One Pando instance: a workspace served over a ROUTER (JSON-RPC) and a
//! PUB socket, registered for discovery while it runs.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gantry_core::Engine;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use zeromq::{PubSocket, RouterSendHalf, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use crate::discovery::{
    DEFAULT_REGISTRY_DIR, DiscoveryError, LockInfo, MODE, Registration, RegistryEntry,
    WorkspaceLock, absolute, derived_ports,
};
use crate::publisher::{run_feed, run_heartbeat};
use crate::pubsock::start_writer;
use crate::service::Service;
use crate::time::now_rfc3339;
use crate::{relay, rpc};

/// Pando's heartbeat period.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How an instance is started.
#[derive(Debug, Clone)]
pub struct InstanceOptions {
    /// The workspace served: sessions are the threads whose workspace it is.
    pub dir: PathBuf,
    /// Where instances register ([`DEFAULT_REGISTRY_DIR`]).
    pub registry_dir: PathBuf,
    /// How often `instance.heartbeat` goes out ([`HEARTBEAT`]).
    pub heartbeat: Duration,
}

impl InstanceOptions {
    /// Pando's defaults for `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            registry_dir: PathBuf::from(DEFAULT_REGISTRY_DIR),
            heartbeat: HEARTBEAT,
        }
    }
}

/// A running instance.
pub struct PandoInstance {
    entry: RegistryEntry,
    notes: Vec<String>,
    task: JoinHandle<()>,
}

impl PandoInstance {
    /// Takes the workspace's lock, binds both sockets on their derived
    /// ports (a free port when one is taken: see [`PandoInstance::notes`]),
    /// registers, and serves until `stop`; then publishes
    /// `instance.shutdown`, closes the sockets and removes the lock file
    /// and the registry entry.
    pub async fn start(
        engine: Engine,
        options: InstanceOptions,
        stop: CancellationToken,
    ) -> Result<Self, DiscoveryError> {
        let dir = absolute(&options.dir).map_err(|source| DiscoveryError::Io {
            what: format!("cannot make {} absolute", options.dir.display()),
            source,
        })?;
        let workspace = std::fs::canonicalize(&dir)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| DiscoveryError::Io {
                what: format!("cannot serve {}", dir.display()),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not an existing directory",
                ),
            })?;
        let lock = WorkspaceLock::acquire(&dir)?;
        let path = dir.to_string_lossy().into_owned();
        let (pub_port, rpc_port) = derived_ports(&path);
        let mut notes = Vec::new();
        let pub_listener = listen(pub_port, "PUB", &mut notes)?;
        let rpc_listener = listen(rpc_port, "RPC", &mut notes)?;
        let bound = |l: &TcpListener| l.local_addr().map(|a| a.port()).unwrap_or_default();
        let entry = RegistryEntry {
            lock: LockInfo {
                instance_id: uuid::Uuid::now_v7().to_string(),
                pid: i64::from(std::process::id()),
                pub_port: bound(&pub_listener),
                rpc_port: bound(&rpc_listener),
                started_at: now_rfc3339(),
            },
            path,
            mode: MODE.to_owned(),
            is_primary: true,
        };
        let bind_error = |what: &str, e: zeromq::ZmqError| DiscoveryError::Io {
            what: format!("cannot serve the {what} socket"),
            source: std::io::Error::other(e.to_string()),
        };
        // The sockets listen on Unix sockets in a directory only this user
        // may enter; clients reach them through the relays (`relay.rs`).
        let private = tempfile::Builder::new()
            .prefix("gantry-pando-")
            .tempdir()
            .map_err(|source| DiscoveryError::Io {
                what: "cannot make the sockets' private directory".to_owned(),
                source,
            })?;
        let inner = |name: &str| -> Result<(UnixListener, PathBuf), DiscoveryError> {
            let path = private.path().join(name);
            let listener = UnixListener::bind(&path).map_err(|source| DiscoveryError::Io {
                what: format!("cannot bind {}", path.display()),
                source,
            })?;
            Ok((listener, path))
        };
        let (pub_inner, pub_path) = inner("pub")?;
        let (rpc_inner, rpc_path) = inner("rpc")?;
        let mut pub_socket = PubSocket::new();
        pub_socket
            .bind_listener(pub_inner)
            .await
            .map_err(|e| bind_error("PUB", e))?;
        let mut router = RouterSocket::new();
        router
            .bind_listener(rpc_inner)
            .await
            .map_err(|e| bind_error("ROUTER", e))?;
        let public = |l: TcpListener, what: &str| {
            l.set_nonblocking(true)
                .and_then(|()| tokio::net::TcpListener::from_std(l))
                .map_err(|source| DiscoveryError::Io {
                    what: format!("cannot serve the {what} port"),
                    source,
                })
        };
        let relays = [
            tokio::spawn(relay::serve(
                public(pub_listener, "PUB")?,
                pub_path,
                stop.clone(),
            )),
            tokio::spawn(relay::serve(
                public(rpc_listener, "RPC")?,
                rpc_path,
                stop.clone(),
            )),
        ];
        let registration = Registration::publish(lock, &entry, &options.registry_dir)?;

        let (publisher, writer) =
            start_writer(pub_socket, entry.lock.instance_id.clone(), stop.clone());
        let feed = engine.feeds().subscribe_all_now();
        let service = Service::new(
            engine,
            dir,
            workspace.to_string_lossy().into_owned(),
            entry.clone(),
            publisher.clone(),
        );
        let tasks = [
            tokio::spawn(serve_rpc(router, service.clone(), stop.clone())),
            tokio::spawn(run_feed(
                service.clone(),
                feed,
                publisher.clone(),
                stop.clone(),
            )),
            tokio::spawn(run_heartbeat(
                service,
                publisher,
                options.heartbeat,
                stop.clone(),
            )),
        ];
        let task = tokio::spawn(async move {
            // The writer ends after `instance.shutdown` and its linger.
            let _ = writer.await;
            for task in tasks.into_iter().chain(relays) {
                task.abort();
            }
            drop(registration);
            drop(private);
        });
        Ok(Self { entry, notes, task })
    }

    /// The registry entry it published.
    pub fn entry(&self) -> &RegistryEntry {
        &self.entry
    }

    /// What a user should know (a derived port was taken).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Waits until it stopped: `instance.shutdown` sent, sockets closed,
    /// files removed.
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}

/// Binds 127.0.0.1:`port`, else a free port (noted).
fn listen(port: u16, what: &str, notes: &mut Vec<String>) -> Result<TcpListener, DiscoveryError> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let l = TcpListener::bind(("127.0.0.1", 0)).map_err(|source| DiscoveryError::Io {
                what: format!("cannot bind the {what} socket"),
                source,
            })?;
            let got = l.local_addr().map(|a| a.port()).unwrap_or_default();
            notes.push(format!(
                "the derived {what} port {port} is taken; using {got} (recorded in the lock file)"
            ));
            Ok(l)
        }
        Err(source) => Err(DiscoveryError::Io {
            what: format!("cannot bind the {what} socket on 127.0.0.1:{port}"),
            source,
        }),
    }
}

/// Answers requests until `stop`, each in its own task (replies may go out
/// of order: clients match them by id).
async fn serve_rpc(router: RouterSocket, service: Arc<Service>, stop: CancellationToken) {
    let (send, mut recv) = router.split();
    loop {
        let message = tokio::select! {
            () = stop.cancelled() => return,
            m = recv.recv() => m,
        };
        match message {
            Ok(message) => {
                tokio::spawn(answer(message, send.clone(), service.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "Pando: the ROUTER socket failed");
                return;
            }
        }
    }
}

/// One request: `[identity, (empty,) json]` in, `[identity, empty, json]` out.
async fn answer(message: ZmqMessage, mut send: RouterSendHalf, service: Arc<Service>) {
    let mut frames = message.into_vec();
    if frames.len() < 2 {
        return;
    }
    let identity = frames.remove(0);
    let body = frames.pop().unwrap_or_default();
    let reply = match rpc::parse(&body) {
        Ok(req) => rpc::reply(&req.id, &service.handle(&req).await),
        Err(()) => rpc::reply("", &Err(rpc::RpcError::parse_error())),
    };
    let Ok(out) = ZmqMessage::try_from(vec![identity, Bytes::new(), Bytes::from(reply)]) else {
        return;
    };
    if let Err(e) = send.send(out).await {
        tracing::debug!(error = %e, "Pando: a reply could not be sent");
    }
}
