//! A JSON-RPC connection to one language server over its stdio: request ids
//! and the map of requests waiting for their response, notifications and
//! requests from the server handed to a [`Handler`], and one writer task so
//! messages never interleave.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::transport::{read_message, write_message};

/// JSON-RPC "method not found", for server requests we do not serve.
const METHOD_NOT_FOUND: i64 = -32601;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RequestError {
    /// No response within the time allowed.
    Timeout,
    /// The caller cancelled it.
    Cancelled,
    /// The connection is gone (the server exited or broke the protocol).
    Closed(String),
    /// The server answered with an error.
    Rpc {
        /// JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
}

/// What the server sends us besides responses.
pub(crate) trait Handler: Send + Sync + 'static {
    /// A notification (`textDocument/publishDiagnostics`, log messages...).
    fn notification(&self, method: &str, params: Value);
    /// A request from the server; the result or a JSON-RPC error.
    fn request(&self, method: &str, params: &Value) -> Result<Value, (i64, String)>;
}

type Reply = oneshot::Sender<Result<Value, RequestError>>;

/// Requests waiting for a response, and why the connection closed once it has.
#[derive(Default)]
struct Pending {
    waiting: HashMap<i64, Reply>,
    closed: Option<String>,
}

/// The client side of the connection. Dropping it stops the writer task;
/// the reader task ends with the server's output.
pub(crate) struct Connection {
    out: mpsc::UnboundedSender<Value>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicI64,
}

/// Locks `m`, recovering from poisoning: no code path panics while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// Starts the reader and writer tasks over `input` (the server's stdout)
    /// and `output` (its stdin).
    pub(crate) fn start<R, W>(input: R, output: W, handler: Arc<dyn Handler>) -> Self
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        tokio::spawn(write_loop(output, rx, pending.clone()));
        tokio::spawn(read_loop(input, out.clone(), pending.clone(), handler));
        Self {
            out,
            pending,
            next_id: AtomicI64::new(1),
        }
    }

    /// Sends a request and waits for its result, at most `timeout`. A request
    /// given up on (timeout, cancel) is cancelled on the server too.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if let Some(why) = &pending.closed {
                return Err(RequestError::Closed(why.clone()));
            }
            pending.waiting.insert(id, tx);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.out.send(message).is_err() {
            lock(&self.pending).waiting.remove(&id);
            return Err(RequestError::Closed("the connection is closed".into()));
        }
        let outcome = tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(RequestError::Closed("the connection is closed".into()))),
            _ = tokio::time::sleep(timeout) => Err(RequestError::Timeout),
            _ = cancel.cancelled() => Err(RequestError::Cancelled),
        };
        if matches!(
            outcome,
            Err(RequestError::Timeout | RequestError::Cancelled)
        ) {
            lock(&self.pending).waiting.remove(&id);
            self.notify("$/cancelRequest", json!({"id": id}));
        }
        outcome
    }

    /// Sends a notification; a closed connection drops it (the next request
    /// reports why).
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

/// Marks the connection closed and fails every waiting request with `why`.
fn close(pending: &Mutex<Pending>, why: String) {
    let waiting = {
        let mut p = lock(pending);
        if p.closed.is_none() {
            p.closed = Some(why.clone());
        }
        std::mem::take(&mut p.waiting)
    };
    for (_, reply) in waiting {
        let _ = reply.send(Err(RequestError::Closed(why.clone())));
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<Value>,
    pending: Arc<Mutex<Pending>>,
) {
    while let Some(message) = rx.recv().await {
        if let Err(e) = write_message(&mut output, &message).await {
            close(&pending, format!("cannot write to the server: {e}"));
            return;
        }
    }
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut input: R,
    out: mpsc::UnboundedSender<Value>,
    pending: Arc<Mutex<Pending>>,
    handler: Arc<dyn Handler>,
) {
    let why = loop {
        let message = match read_message(&mut input).await {
            Ok(Some(m)) => m,
            Ok(None) => break "the server closed its output".to_owned(),
            Err(e) => break format!("the server broke the protocol: {e}"),
        };
        dispatch(message, &out, &pending, handler.as_ref());
    };
    close(&pending, why);
}

/// Routes one message from the server.
fn dispatch(
    message: Value,
    out: &mpsc::UnboundedSender<Value>,
    pending: &Mutex<Pending>,
    handler: &dyn Handler,
) {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null());
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let reply = match handler.request(method, &params) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, msg)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": msg}})
                }
            };
            let _ = out.send(reply);
        }
        (Some(method), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            handler.notification(method, params);
        }
        (None, Some(id)) => {
            // Our ids are integers; anything else answers nothing we sent.
            let Some(id) = id.as_i64() else { return };
            let Some(reply) = lock(pending).waiting.remove(&id) else {
                return;
            };
            let outcome = match message.get("error") {
                Some(err) if !err.is_null() => Err(RequestError::Rpc {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned(),
                }),
                _ => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = reply.send(outcome);
        }
        (None, None) => {}
    }
}

/// The answer to server requests no handler knows.
pub(crate) fn method_not_found(method: &str) -> (i64, String) {
    (
        METHOD_NOT_FOUND,
        format!("the client does not handle {method}"),
    )
}
