//! The gRPC server: CodeAgentService behind optional bearer-token auth and
//! TLS, on TCP or a Unix socket, with `grpc.health.v1` and server
//! reflection, and a graceful stop.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use gantry_core::Engine;
use gantry_grpc::{GuardLayer, incoming};
use tokio::sync::watch;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::auth::Auth;
use crate::listener::Listener;
use crate::pb;
use crate::pb::code_agent_service_server::CodeAgentServiceServer;
use crate::service::CodeAgent;
use crate::state::Ctx;

/// The default listen address (the A3S SDK's default).
pub const DEFAULT_ADDR: &str = "127.0.0.1:4088";

/// How long connections get to close once running turns are interrupted.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Workspace of sessions that name none.
    pub workspace: PathBuf,
    /// When set, every CodeAgentService call must carry
    /// `authorization: Bearer <token>` (health and reflection stay open,
    /// for probes and discovery), unless it comes over the server's Unix
    /// socket from the server's own user.
    pub auth_token: Option<String>,
    /// Whether `GetProvider` and `ListProviders` return the providers'
    /// keys to authenticated callers (token or Unix socket peer), as A3S
    /// does; masked otherwise and by default.
    pub reveal_provider_keys: bool,
    /// PEM certificate chain and private key; plaintext when `None`.
    pub tls: Option<TlsPem>,
    /// How long running calls may go on after a stop is asked for, before
    /// the engine interrupts running turns.
    pub grace: Duration,
    /// Whether the `Shutdown` rpc stops the process. By default it shuts
    /// the agent down and the server keeps serving, as A3S's server does.
    pub exit_on_shutdown: bool,
}

/// A PEM certificate chain and key.
#[derive(Debug, Clone)]
pub struct TlsPem {
    /// Certificate chain.
    pub cert: Vec<u8>,
    /// Private key.
    pub key: Vec<u8>,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The TLS material or the transport failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// Reflection could not be set up from the descriptor set.
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Serves on `listener` (TCP or a Unix socket) until `stop` completes (or a client calls
/// `Shutdown`, with `exit_on_shutdown`); then stops accepting, lets calls finish for the grace
/// period, interrupts what still runs, and flushes the store.
pub async fn serve(
    engine: Engine,
    listener: impl Into<Listener>,
    options: ServeOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let ctx = Arc::new(Ctx::new(
        engine.clone(),
        options.workspace,
        stop_tx.clone(),
        options.exit_on_shutdown,
        options.reveal_provider_keys,
    ));
    let service = CodeAgentServiceServer::new(CodeAgent::new(ctx))
        .max_decoding_message_size(64 * 1024 * 1024);
    let auth = Auth::new(options.auth_token);

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<CodeAgentServiceServer<CodeAgent>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    // Refuses what is not gRPC with protobuf, and unary calls carrying
    // more than one message.
    let mut builder = Server::builder().layer(GuardLayer::new(pb::SINGLE_MESSAGE_METHODS));
    if let Some(tls) = options.tls {
        builder = builder
            .tls_config(ServerTlsConfig::new().identity(Identity::from_pem(tls.cert, tls.key)))?;
    }

    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    let mut stopping = stop_rx.clone();
    let router = builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(service, auth));
    let stopped = async move {
        let _ = stopping.wait_for(|s| *s).await;
    };
    let (server, socket): (Pin<Box<dyn Future<Output = _> + Send>>, _) = match listener.into() {
        Listener::Tcp(listener) => (
            Box::pin(router.serve_with_incoming_shutdown(incoming(listener), stopped)),
            None,
        ),
        Listener::Unix { listener, path } => (
            Box::pin(
                router.serve_with_incoming_shutdown(UnixListenerStream::new(listener), stopped),
            ),
            Some(path),
        ),
    };
    let mut server = server;

    let result = tokio::select! {
        result = &mut server => result,
        // The watch guard must not live across the awaits below (the
        // future would not be `Send`): drop it inside the block.
        () = async { let _ = stop_rx.wait_for(|s| *s).await; } => {
            health.set_not_serving::<CodeAgentServiceServer<CodeAgent>>().await;
            // Calls in flight (a streaming turn, say) get the grace period;
            // then running turns are interrupted, which ends their calls.
            match tokio::time::timeout(options.grace, &mut server).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::info!("grace period over; interrupting running turns");
                    if let Err(e) = engine.shutdown().await {
                        tracing::error!(error = %e, "interrupted turns' last events are not saved yet");
                    }
                    // Interrupted turns end their calls at once; a client
                    // that still holds its connection open does not get to
                    // keep the process alive.
                    match tokio::time::timeout(CLOSE_WAIT, &mut server).await {
                        Ok(result) => result,
                        Err(_) => Ok(()),
                    }
                }
            }
        }
    };
    if let Err(e) = engine.shutdown().await {
        tracing::error!(error = %e, "stopping with events not saved");
    }
    if let Some(path) = socket {
        let _ = std::fs::remove_file(path);
    }
    result.map_err(ServeError::from)
}
