//! JSON-RPC 2.0 as Pando's ROUTER speaks it: the request's `id` is a
//! string (anything else is a parse error answered with `"id":""`), a
//! reply carries exactly one of `result` and `error`, and `error` is
//! `{code, message}` only.

use serde::Serialize;
use serde_json::{Map, Value};

/// The request could not be read.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// No such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// The method failed; the message is `<method>: <reason>`.
pub(crate) const HANDLER_ERROR: i64 = -32000;

/// A request read off the socket.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    pub id: String,
    pub method: String,
    /// `None` when absent or `null`.
    pub params: Option<Value>,
}

/// Reads a request as Go's `json.Unmarshal` into Pando's request struct
/// would: fields of the wrong type fail, missing ones are empty.
pub(crate) fn parse(body: &[u8]) -> Result<Request, ()> {
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(());
    };
    let text = |fields: &mut Map<String, Value>, key: &str| match fields.remove(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(()),
    };
    text(&mut fields, "jsonrpc")?;
    let id = text(&mut fields, "id")?;
    let method = text(&mut fields, "method")?;
    let params = fields.remove("params").filter(|p| !p.is_null());
    Ok(Request { id, method, params })
}

/// An answer's error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// -32000 with `<method>: <reason>`.
    pub(crate) fn handler(method: &str, reason: impl std::fmt::Display) -> Self {
        Self {
            code: HANDLER_ERROR,
            message: format!("{method}: {reason}"),
        }
    }

    /// -32601.
    pub(crate) fn method_not_found() -> Self {
        Self {
            code: METHOD_NOT_FOUND,
            message: "ipc: method not found".to_owned(),
        }
    }

    /// -32601 for a method Pando has and Gantry does not serve, saying why.
    pub(crate) fn not_served(message: &str) -> Self {
        Self {
            code: METHOD_NOT_FOUND,
            message: message.to_owned(),
        }
    }

    /// -32700.
    pub(crate) fn parse_error() -> Self {
        Self {
            code: PARSE_ERROR,
            message: "parse error".to_owned(),
        }
    }
}

#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

/// The JSON of the answer to request `id`.
pub(crate) fn reply(id: &str, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    let reply = match outcome {
        Ok(result) => Reply {
            jsonrpc: "2.0",
            id,
            result: Some(result),
            error: None,
        },
        Err(error) => Reply {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(error),
        },
    };
    // A struct of strings and a `Value` always serializes.
    serde_json::to_vec(&reply).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_id_is_read_and_anything_else_is_a_parse_error() {
        let ok = parse(br#"{"jsonrpc":"2.0","id":"7","method":"instance.ping"}"#).unwrap();
        assert_eq!(ok.id, "7");
        assert_eq!(ok.method, "instance.ping");
        assert_eq!(ok.params, None);
        assert!(parse(br#"{"jsonrpc":"2.0","id":7,"method":"instance.ping"}"#).is_err());
        assert!(parse(br#"{"jsonrpc":"2.0","id":"1","method":5}"#).is_err());
        assert!(parse(b"not json").is_err());
        assert!(parse(b"[1,2]").is_err());
        let with = parse(br#"{"id":"1","method":"m","params":{"a":1}}"#).unwrap();
        assert_eq!(with.params, Some(json!({"a":1})));
    }

    #[test]
    fn a_reply_carries_exactly_one_of_result_and_error() {
        let ok: Value = serde_json::from_slice(&reply("1", &Ok(json!([])))).unwrap();
        assert_eq!(ok, json!({"jsonrpc":"2.0","id":"1","result":[]}));
        let err: Value = serde_json::from_slice(&reply("", &Err(RpcError::parse_error()))).unwrap();
        assert_eq!(
            err,
            json!({"jsonrpc":"2.0","id":"","error":{"code":-32700,"message":"parse error"}})
        );
        let handler = RpcError::handler("session.get", "session not found: x");
        assert_eq!(handler.code, -32000);
        assert_eq!(handler.message, "session.get: session not found: x");
    }
}
