//! Serving the control plane: the gRPC service for runners and the HTTP API
//! for users, side by side, until a shutdown signal.

use std::future::{Future, IntoFuture};
use std::time::Duration;

use axum::serve::ListenerExt;
use gantry_grpc::{GuardLayer, incoming};
use tokio::net::TcpListener;
use tonic::transport::Server;

use crate::ControlPlane;

/// How long connections get to close after the stop, before serve returns anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Why a server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The gRPC transport failed.
    #[error("control plane gRPC server: {0}")]
    Grpc(#[from] tonic::transport::Error),
    /// The HTTP server failed.
    #[error("control plane HTTP server: {0}")]
    Http(#[from] std::io::Error),
}

/// Serves runners on `grpc` and users on `http` until `shutdown` completes
/// (or a server fails): then drains (takes no new runner, waits for the
/// requests in flight, see [`ControlPlane::drain`]), closes runner channels
/// and live streams, stops accepting, and gives connections a moment to close.
pub async fn serve(
    cp: ControlPlane,
    grpc: TcpListener,
    http: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let grpc_server = {
        let cp = cp.clone();
        async move {
            // Pings show a runner's connection alive or end it: a runner
            // whose old channel died unseen (half-open TCP) is let back in
            // once the unanswered ping closes it.
            let keepalive = cp.inner.keepalive;
            let served = Server::builder()
                // Refuses what is not gRPC with protobuf, and unary calls
                // carrying more than one message.
                .layer(GuardLayer::new(
                    gantry_runner_protocol::SINGLE_MESSAGE_METHODS,
                ))
                .http2_keepalive_interval(Some(keepalive))
                .http2_keepalive_timeout(Some(keepalive))
                .add_service(cp.grpc_service())
                .serve_with_incoming_shutdown(
                    incoming(grpc),
                    cp.inner.stop.clone().cancelled_owned(),
                )
                .await;
            // One server down takes the other with it.
            cp.shutdown();
            served.map_err(ServeError::from)
        }
    };
    let router = cp.http_router(http.local_addr()?);
    let http_server = {
        let cp = cp.clone();
        let listener = http.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "cannot set TCP_NODELAY");
            }
        });
        async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(cp.inner.stop.clone().cancelled_owned())
                .into_future()
                .await;
            cp.shutdown();
            served.map_err(ServeError::from)
        }
    };
    let servers = async { tokio::join!(grpc_server, http_server) };
    tokio::pin!(servers);
    // Asked to stop, or stopped by a failing server or `ControlPlane::shutdown`.
    let stopping = async {
        tokio::select! {
            () = shutdown => {}
            () = cp.inner.stop.cancelled() => {}
        }
    };
    let (grpc_result, http_result) = tokio::select! {
        results = &mut servers => results,
        () = stopping => {
            // Requests in flight are answered first (runner channels stay
            // open for them); no new runner is taken meanwhile.
            let ended = if cp.inner.stop.is_cancelled() {
                None
            } else {
                tokio::select! {
                    () = cp.drain() => None,
                    results = &mut servers => Some(results),
                }
            };
            cp.shutdown();
            match ended {
                Some(results) => results,
                None => match tokio::time::timeout(CLOSE_WAIT, &mut servers).await {
                    Ok(results) => results,
                    Err(_) => {
                        tracing::info!("connections still open after the stop; leaving them");
                        return Ok(());
                    }
                },
            }
        }
    };
    grpc_result?;
    http_result
}
