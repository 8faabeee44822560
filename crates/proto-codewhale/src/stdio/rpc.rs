//! JSON-RPC 2.0 envelopes as CodeWhale's stdio server writes them: every
//! request is answered, one without an id with `id: null`; an error
//! carries `data: null`, or (0.10) what the refusal adds.

use serde_json::{Value, json};

use crate::service::ServiceError;

/// A request line, once it is JSON.
pub(super) struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// A JSON-RPC error.
#[derive(Debug)]
pub(super) struct RpcError {
    pub code: i64,
    pub message: String,
    /// More (0.10's errors carry it; `null` otherwise).
    pub data: Value,
}

impl RpcError {
    pub(super) fn parse(message: impl Into<String>) -> Self {
        Self {
            code: -32700,
            message: message.into(),
            data: Value::Null,
        }
    }

    pub(super) fn invalid_request(message: impl Into<String>) -> Self {
        Self {
            code: -32600,
            message: message.into(),
            data: Value::Null,
        }
    }

    pub(super) fn method_not_found(method: &str) -> Self {
        Self {
            code: -32601,
            message: format!("unsupported method: {method}"),
            data: Value::Null,
        }
    }

    pub(super) fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
            data: Value::Null,
        }
    }

    pub(super) fn internal(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
            data: Value::Null,
        }
    }
}

impl From<ServiceError> for RpcError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(m) => RpcError::invalid_params(m),
            ServiceError::Internal(m) => RpcError::internal(m),
        }
    }
}

impl From<crate::Refusal> for RpcError {
    fn from(r: crate::Refusal) -> Self {
        Self {
            code: r.code,
            message: r.message,
            data: r.data,
        }
    }
}

/// Reads one line: a request, or the error to answer it with (and the id
/// to answer with, when the line had one).
pub(super) fn read(line: &str) -> Result<Request, (Value, RpcError)> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| (Value::Null, RpcError::parse(format!("invalid json: {e}"))))?;
    let Some(object) = value.as_object() else {
        return Err((
            Value::Null,
            RpcError::invalid_request("a request is a JSON object"),
        ));
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    match object.get("jsonrpc") {
        None => {}
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return Err((id, RpcError::invalid_request("jsonrpc version must be 2.0"))),
    }
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        return Err((
            id,
            RpcError::invalid_request("a request needs a string `method`"),
        ));
    };
    Ok(Request {
        id: id.clone(),
        method: method.to_owned(),
        params: object.get("params").cloned().unwrap_or(Value::Null),
    })
}

/// A result line.
pub(super) fn result(id: Value, result: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
}

/// An error line.
pub(super) fn error(id: Value, e: RpcError) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": e.code, "message": e.message, "data": e.data }
    })
    .to_string()
}

/// A notification line: a frame, of a thread or of the server.
pub(super) fn event(thread_id: Option<&str>, id: Option<String>, frame: Value) -> String {
    let mut params = json!({ "frame": frame });
    if let Some(thread) = thread_id {
        params["thread_id"] = Value::String(thread.to_owned());
    }
    if let Some(id) = id {
        params["id"] = Value::String(id);
    }
    json!({ "jsonrpc": "2.0", "method": "event", "params": params }).to_string()
}
