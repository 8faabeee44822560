//! The one error shape of the API: `{"error": {"code", "message",
//! "details"}}` with the status its code names, and request bodies read so
//! that a bad one names its field.

use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gantry_core::EngineError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use utoipa::ToSchema;

/// Every error answer: `{"error": {...}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `bad_request`, `unauthorized`,
    /// `forbidden`, `not_found`, `method_not_allowed`, `misdirected`,
    /// `conflict`, `unsupported_media_type`, `validation_failed`,
    /// `internal`, `unavailable`.
    pub code: String,
    /// For a human.
    pub message: String,
    /// More, by code: `field` (the body field at fault, as a path) for
    /// `validation_failed`.
    #[schema(value_type = Object)]
    pub details: Value,
}

/// An error answer: its status and body.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Value,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: json!({}),
        }
    }

    /// 400: the request cannot be read (not JSON, a bad header).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: no valid bearer token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: the caller may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404: the thing named does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 405: the path exists, the method does not.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this path does not take that method; see /openapi.json",
        )
    }

    /// The same error with `details` (what its code says they hold).
    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// 409: it exists, but its state forbids this now.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 421: the request named another host.
    pub fn misdirected(message: impl Into<String>) -> Self {
        Self::new(StatusCode::MISDIRECTED_REQUEST, "misdirected", message)
    }

    /// 415: a body that is not `application/json`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
    }

    /// 422: well-formed, but a value is wrong; `field` names it when known.
    pub fn validation(field: Option<&str>, message: impl Into<String>) -> Self {
        let mut error = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            message,
        );
        if let Some(field) = field {
            error.details = json!({ "field": field });
        }
        error
    }

    /// 503: the engine cannot do it now (stopping, store down).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// Whether the message names `word` (to find the field of an
    /// engine's refusal that names it).
    pub(crate) fn mentions(&self, word: &str) -> bool {
        self.message.contains(word)
    }

    /// The same error, naming `field`.
    pub(crate) fn with_field(mut self, field: &str) -> Self {
        self.details = json!({ "field": field });
        self
    }

    /// The same error, its field (if it names one) taken as one inside
    /// `parent`: a thread's `model` is an agent job's `action.model`.
    pub(crate) fn in_field(mut self, parent: &str) -> Self {
        if let Some(field) = self.details.get("field").and_then(Value::as_str) {
            self.details = json!({ "field": format!("{parent}.{field}") });
        }
        self
    }

    /// The same message as a 409 (an engine refusal that is one).
    pub(crate) fn into_conflict(self) -> Self {
        Self::conflict(self.message)
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match e {
            EngineError::ThreadNotFound(_)
            | EngineError::TurnNotFound { .. }
            | EngineError::NotFound { .. } => Self::not_found(message),
            EngineError::Busy { .. }
            | EngineError::NotSteerable { .. }
            | EngineError::Archived(_)
            | EngineError::AlreadyResolved { .. }
            | EngineError::AlreadyExists { .. } => Self::conflict(message),
            EngineError::InvalidInput(_)
            | EngineError::Structured { .. }
            | EngineError::Unsupported(_) => Self::validation(None, message),
            EngineError::Unavailable(_)
            | EngineError::StoreUnavailable(_)
            | EngineError::ShuttingDown => Self::unavailable(message),
            other => {
                tracing::warn!(error = %other, "HTTP API: engine failure");
                Self::internal(message)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"gantry\""),
            );
        }
        response
    }
}

/// The JSON body as `T`: 400 if it is not JSON, 422 naming the field
/// (as a path, e.g. `policy.rules[0]`) if a value is missing or wrong.
pub(crate) fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    // Not JSON at all is a 400; JSON of the wrong shape a 422.
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = field_of(&path, &inner);
        let message = match &field {
            Some(f) => format!("invalid body: `{f}`: {inner}"),
            None => format!("invalid body: {inner}"),
        };
        ApiError::validation(field.as_deref(), message)
    })
}

/// [`body`], where an empty body means `{}`.
pub(crate) fn optional_body<T: DeserializeOwned + Default>(bytes: &Bytes) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    body(bytes)
}

/// The field at fault: the path serde reached, plus the field a "missing
/// field `x`" or "unknown field `x`" names (serde reports those at the
/// enclosing object).
fn field_of(path: &str, message: &str) -> Option<String> {
    let path = (path != ".").then(|| path.to_owned());
    let missing = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    match (path, missing) {
        (Some(p), Some(m)) if p == m || p.ends_with(&format!(".{m}")) => Some(p),
        (Some(p), Some(m)) => Some(format!("{p}.{m}")),
        (p, m) => p.or(m),
    }
}

/// The answer to a path no route serves.
pub(crate) async fn no_route() -> ApiError {
    ApiError::not_found("no such route; see /openapi.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        text: String,
        inner: Option<Inner>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    fn field(json: &str) -> Option<String> {
        let e = body::<Sample>(&Bytes::from(json.to_owned())).unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{json}");
        e.details["field"].as_str().map(str::to_owned)
    }

    #[test]
    fn a_bad_body_names_its_field() {
        assert_eq!(field("{}").as_deref(), Some("text"));
        assert_eq!(field(r#"{"text": 3}"#).as_deref(), Some("text"));
        assert_eq!(
            field(r#"{"text": "a", "inner": {"count": "x"}}"#).as_deref(),
            Some("inner.count")
        );
        assert_eq!(
            field(r#"{"text": "a", "inner": {}}"#).as_deref(),
            Some("inner.count")
        );
        let e = body::<Sample>(&Bytes::from_static(b"{not json")).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }
}
