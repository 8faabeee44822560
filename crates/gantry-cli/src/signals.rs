//! Process signals the long-running commands stop on.

use std::future::Future;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: a signal sent right after a
/// daemon announces that it listens stops it gracefully instead of killing
/// it.
pub(crate) fn stop_signal() -> impl Future<Output = ()> + Send + 'static {
    let interrupt = signal(SignalKind::interrupt()).ok();
    let terminate = signal(SignalKind::terminate()).ok();
    async move {
        tokio::select! {
            () = recv(interrupt) => {}
            () = recv(terminate) => {}
        }
    }
}

/// The next signal of `listener`; never, when it could not be installed.
async fn recv(listener: Option<Signal>) {
    match listener {
        Some(mut listener) => {
            listener.recv().await;
        }
        None => std::future::pending().await,
    }
}
