//! The accept loop of a server that is handed its listener.

use tokio::net::{TcpListener, TcpStream};
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::{Stream, StreamExt};

/// The connections `listener` accepts, without Nagle's algorithm: a
/// streamed message goes out at once instead of waiting for the peer's
/// delayed ACK (~40 ms). (tonic applies its own `tcp_nodelay` only to
/// listeners it binds.)
pub fn incoming(listener: TcpListener) -> impl Stream<Item = std::io::Result<TcpStream>> {
    TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "cannot set TCP_NODELAY");
            }
        })
    })
}
