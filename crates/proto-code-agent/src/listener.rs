//! Where the server listens: a TCP address, or a Unix socket
//! (`unix:PATH`, the address grpc-js clients such as A3S's SDK dial) that
//! only the server's user may open.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::{TcpListener, UnixListener, UnixStream};

/// The prefix of a Unix socket address.
const UNIX_PREFIX: &str = "unix:";

/// A bound listener.
#[derive(Debug)]
pub enum Listener {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix socket (mode 0600), removed when the server stops.
    Unix {
        /// The listener.
        listener: UnixListener,
        /// Its path.
        path: PathBuf,
    },
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Listener::Tcp(listener)
    }
}

impl Listener {
    /// Binds `addr`: `HOST:PORT`, or `unix:PATH` (also `unix://PATH`). A
    /// socket file left by a server that is gone is replaced; one a live
    /// server answers on is not.
    pub async fn bind(addr: &str) -> io::Result<Self> {
        let Some(path) = addr.strip_prefix(UNIX_PREFIX) else {
            return Ok(Listener::Tcp(TcpListener::bind(addr).await?));
        };
        let path = PathBuf::from(path.strip_prefix("//").unwrap_or(path));
        if path.as_os_str().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "unix: needs a socket path (unix:/run/gantry.sock)",
            ));
        }
        remove_stale(&path).await?;
        let listener = UnixListener::bind(&path)?;
        // Only the server's user may connect; the interceptor checks the
        // peer's user id as well.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok(Listener::Unix { listener, path })
    }

    /// The address, as clients dial it (`127.0.0.1:4088`, `unix:/path`).
    pub fn address(&self) -> io::Result<String> {
        match self {
            Listener::Tcp(l) => Ok(l.local_addr()?.to_string()),
            Listener::Unix { path, .. } => Ok(format!("{UNIX_PREFIX}{}", path.display())),
        }
    }

    /// Whether only this machine can reach it (loopback or a Unix socket).
    pub fn is_local(&self) -> bool {
        match self {
            Listener::Tcp(l) => l.local_addr().is_ok_and(|a| a.ip().is_loopback()),
            Listener::Unix { .. } => true,
        }
    }
}

/// Removes a socket file no server answers on; refuses to touch anything
/// else (a live server's socket, a regular file).
async fn remove_stale(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    if UnixStream::connect(path).await.is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a server already listens on {}", path.display()),
        ));
    }
    std::fs::remove_file(path)
}
