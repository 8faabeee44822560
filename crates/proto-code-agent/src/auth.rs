//! Who may call the service, and who is known: a bearer token
//! (`--auth-token-file`), or, over a Unix socket, the operating system's
//! word that the caller runs as the server's own user (the A3S SDK sends
//! no metadata, but it can dial `unix:PATH`).

use std::sync::Arc;

use tonic::transport::server::{TlsConnectInfo, UdsConnectInfo};
use tonic::{Request, Status};

/// What the interceptor found out about a call; every CodeAgentService
/// request carries one in its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// Let in without proof of who it is (a server without a token).
    Anonymous,
    /// Showed the token, or is the server's own user on its Unix socket.
    Authenticated,
}

impl Caller {
    /// The caller of `request` (anonymous when the interceptor set none).
    pub(crate) fn of<T>(request: &Request<T>) -> Self {
        request
            .extensions()
            .get::<Caller>()
            .copied()
            .unwrap_or(Caller::Anonymous)
    }
}

/// Checks every CodeAgentService call: with a token, the call must carry
/// `authorization: Bearer <token>` unless it comes over the server's Unix
/// socket from the server's own user.
#[derive(Clone)]
pub(crate) struct Auth {
    token: Option<Arc<str>>,
    /// The server's user id, which a Unix socket peer must have.
    uid: u32,
}

impl Auth {
    pub(crate) fn new(token: Option<String>) -> Self {
        Self {
            token: token.map(Arc::from),
            uid: rustix::process::getuid().as_raw(),
        }
    }

    /// Whether the call came over a Unix socket from the server's user.
    fn same_user_socket(&self, request: &Request<()>) -> bool {
        let ext = request.extensions();
        let info = ext.get::<UdsConnectInfo>().or_else(|| {
            ext.get::<TlsConnectInfo<UdsConnectInfo>>()
                .map(TlsConnectInfo::get_ref)
        });
        info.and_then(|i| i.peer_cred)
            .is_some_and(|cred| cred.uid() == self.uid)
    }
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let caller = if self.same_user_socket(&request) {
            Caller::Authenticated
        } else if let Some(expected) = &self.token {
            let given = request
                .metadata()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given {
                Some(token) if same(token.as_bytes(), expected.as_bytes()) => Caller::Authenticated,
                Some(_) => return Err(Status::unauthenticated("invalid bearer token")),
                None => {
                    return Err(Status::unauthenticated(
                        "missing `authorization: Bearer <token>` metadata (or dial the \
                         server's Unix socket as its user)",
                    ));
                }
            }
        } else {
            Caller::Anonymous
        };
        request.extensions_mut().insert(caller);
        Ok(request)
    }
}

/// Compares in time independent of where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
