//! The agent's side of the connection: lines out (one writer, back-
//! pressured), its own requests to the client and their answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::RpcError;
use super::envelope;

type Waiting = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

/// Sends lines to the client and waits for the answers to its requests.
#[derive(Clone)]
pub(crate) struct Peer {
    out: mpsc::Sender<String>,
    next_id: Arc<AtomicU64>,
    waiting: Arc<Mutex<Waiting>>,
}

impl Peer {
    /// A peer writing to `out`.
    pub(crate) fn new(out: mpsc::Sender<String>) -> Self {
        Self {
            out,
            next_id: Arc::default(),
            waiting: Arc::default(),
        }
    }

    async fn send(&self, line: String) -> bool {
        self.out.send(line).await.is_ok()
    }

    /// Answers a request.
    pub(crate) async fn answer(&self, id: &Value, result: Result<Value, RpcError>) {
        let line = match result {
            Ok(value) => envelope::result(id, value),
            Err(e) => envelope::error(id, &e),
        };
        self.send(line).await;
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: impl Serialize) -> bool {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string())
            .await
    }

    /// Asks the client and waits for its answer.
    pub(crate) async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<T, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        let params = serde_json::to_value(params).map_err(|e| RpcError::internal(e.to_string()))?;
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if !self.send(line.to_string()).await {
            self.lock().remove(&id);
            return Err(RpcError::internal("the connection to the client is closed"));
        }
        let value = rx.await.map_err(|_| {
            RpcError::internal("the connection closed before the client answered")
        })??;
        serde_json::from_value(value).map_err(|e| {
            RpcError::invalid_params(format!("the client's answer to {method} is malformed: {e}"))
        })
    }

    /// Hands an answer from the client to whoever asked.
    pub(crate) fn answered(&self, id: &Value, result: Result<Value, RpcError>) {
        let Some(id) = id.as_u64() else {
            tracing::warn!(%id, "an answer to no request of ours");
            return;
        };
        match self.lock().remove(&id) {
            Some(tx) => {
                let _ = tx.send(result);
            }
            None => tracing::warn!(id, "an answer to no request of ours"),
        }
    }

    /// Fails every request still waiting (the client went away).
    pub(crate) fn close(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}
