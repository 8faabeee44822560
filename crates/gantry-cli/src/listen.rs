//! Binding a listener's address; when that fails, the error names the
//! address, the flag that chose it and what to do, since a port another
//! process holds is among the first things a new user runs into.

use std::io;

use tokio::net::TcpListener;

/// Binds `addr` (`HOST:PORT`), which `flag` chose.
pub(crate) async fn tcp(addr: &str, flag: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| cannot_listen(addr, flag, &e))
}

/// Why `addr`, which `flag` chose, cannot be listened on, and what to do.
pub(crate) fn cannot_listen(addr: &str, flag: &str, error: &io::Error) -> anyhow::Error {
    let start = format!("cannot listen on {addr} ({flag})");
    match error.kind() {
        io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "{start}: the address is in use, by another gantry or another server; stop that \
             one, or choose another address with {flag} (port 0 picks a free one)"
        ),
        io::ErrorKind::AddrNotAvailable => anyhow::anyhow!(
            "{start}: no network interface of this machine has that address; choose one it \
             has with {flag} (127.0.0.1: this machine only, 0.0.0.0: every interface)"
        ),
        // A Unix socket's path has no port; its own error says enough.
        io::ErrorKind::PermissionDenied if !addr.starts_with("unix:") => anyhow::anyhow!(
            "{start}: permission denied (ports below 1024 need privileges); choose a port \
             above 1023 with {flag}"
        ),
        // `localhost` alone, a missing port: an address that does not parse.
        io::ErrorKind::InvalidInput if !addr.starts_with("unix:") => anyhow::anyhow!(
            "{start}: {error}; give HOST:PORT with {flag} (127.0.0.1:0 picks a free port)"
        ),
        _ => anyhow::anyhow!("{start}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_refusal_says_what_to_do() {
        let said = |addr: &str, kind| {
            cannot_listen(addr, "--http-addr", &io::Error::from(kind)).to_string()
        };
        assert!(
            said("10.9.9.9:80", io::ErrorKind::AddrNotAvailable)
                .ends_with("choose one it has with --http-addr (127.0.0.1: this machine only, 0.0.0.0: every interface)")
        );
        assert!(
            said("0.0.0.0:80", io::ErrorKind::PermissionDenied)
                .ends_with("choose a port above 1023 with --http-addr")
        );
        // The real error of an address without a port.
        let error = tcp("localhost", "--http-addr").await.expect_err("no port");
        assert_eq!(
            error.to_string(),
            "cannot listen on localhost (--http-addr): invalid socket address; give HOST:PORT \
             with --http-addr (127.0.0.1:0 picks a free port)"
        );
    }
}
