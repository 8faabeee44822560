//! One line in, its meaning; answers and errors out.

use serde_json::{Value, json};

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn parse(message: impl Into<String>) -> Self {
        Self::new(-32700, message)
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message)
    }

    pub(crate) fn method_not_found(method: &str) -> Self {
        Self::new(-32601, format!("method not found: {method}"))
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message)
    }

    /// ACP's "resource not found": an unknown session.
    pub(crate) fn unknown_session(id: &str) -> Self {
        Self::new(-32002, format!("session not found: {id}"))
    }

    /// The error object of an error line.
    pub(crate) fn from_object(error: &Value) -> Self {
        Self::new(
            error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the client answered with an error")
                .to_owned(),
        )
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// What a line is.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request to answer.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification.
    Notification { method: String, params: Value },
    /// The answer to one of the agent's requests.
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
}

/// Reads one line: what it is, or the error to answer it with (and the id
/// to answer with, when the line had one).
pub(crate) fn read(line: &str) -> Result<Incoming, (Value, RpcError)> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| (Value::Null, RpcError::parse(format!("invalid JSON: {e}"))))?;
    let Some(object) = value.as_object() else {
        return Err((
            Value::Null,
            RpcError::invalid_request("a message is a JSON object (no batches)"),
        ));
    };
    let id = object.get("id").cloned();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request("`jsonrpc` must be \"2.0\""),
        ));
    }
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request {
            id,
            method: method.clone(),
            params,
        }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification {
            method: method.clone(),
            params,
        }),
        (Some(_), id) => Err((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request("`method` must be a string"),
        )),
        (None, Some(id)) => {
            let result = match (object.get("result"), object.get("error")) {
                (_, Some(error)) => Err(RpcError::from_object(error)),
                (Some(result), None) => Ok(result.clone()),
                (None, None) => Err(RpcError::invalid_request(
                    "a response needs `result` or `error`",
                )),
            };
            Ok(Incoming::Response { id, result })
        }
        (None, None) => Err((
            Value::Null,
            RpcError::invalid_request("a message needs a `method` or an `id`"),
        )),
    }
}

/// A result line.
pub(crate) fn result(id: &Value, result: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
}

/// An error line.
pub(crate) fn error(id: &Value, e: &RpcError) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": e.code, "message": e.message }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_requests_notifications_and_answers() {
        let r = read(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
        assert!(matches!(r, Ok(Incoming::Request { id, .. }) if id == json!(0)));
        let n = read(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#);
        assert!(matches!(n, Ok(Incoming::Notification { .. })));
        let a = read(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#);
        assert!(matches!(a, Ok(Incoming::Response { result: Err(e), .. }) if e.code == -32601));
        let bad = read("[1]").err().map(|(_, e)| e.code);
        assert_eq!(bad, Some(-32600));
        let garbage = read("{").err().map(|(_, e)| e.code);
        assert_eq!(garbage, Some(-32700));
    }
}
