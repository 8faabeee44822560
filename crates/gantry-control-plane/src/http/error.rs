//! Errors as HTTP answers, in the shape Gantry's own HTTP API (`proto-http`)
//! uses, so one client reads both: `{"error": {"code", "message",
//! "details"}}` with the status that says why; and request bodies read so
//! that a bad one names its field.

use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::{IntoResponses, ToSchema};

use crate::error::ApiError;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Self::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
            Self::BadGateway(_) => (StatusCode::BAD_GATEWAY, "bad_gateway"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        (status, Json(error_body(code, &self.to_string()))).into_response()
    }
}

/// Every error answer: `{"error": {...}}`.
#[derive(Serialize, ToSchema)]
pub(super) struct ErrorBody {
    /// What went wrong.
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, ToSchema)]
struct ErrorDetail {
    /// Stable, machine-readable: `bad_request`, `unauthorized`, `forbidden`,
    /// `not_found`, `misdirected`, `conflict`, `unsupported_media_type`,
    /// `unavailable`, `timeout`, `bad_gateway`, `internal`.
    code: String,
    /// For a human.
    message: String,
    /// More, by code (empty so far).
    #[schema(value_type = Object)]
    details: serde_json::Value,
}

/// How a route that reaches a runner may fail there, documented once for
/// every such route (`responses(..., RunnerFailures)`); only the OpenAPI
/// document reads it, answers are [`ApiError`]s.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(super) enum RunnerFailures {
    /// [`ApiError::BadGateway`].
    #[response(
        status = 502,
        description = "The runner (or the replica holding it) answered something else than asked"
    )]
    BadGateway(ErrorBody),
    /// [`ApiError::Unavailable`].
    #[response(
        status = 503,
        description = "The runner is not connected, or unhealthy"
    )]
    Unavailable(ErrorBody),
    /// [`ApiError::Timeout`].
    #[response(status = 504, description = "The runner did not answer in time")]
    Timeout(ErrorBody),
}

/// The error body: `{"error": {"code", "message", "details"}}`.
pub(super) fn error_body(code: &str, message: &str) -> ErrorBody {
    ErrorBody {
        error: ErrorDetail {
            code: code.to_owned(),
            message: message.to_owned(),
            details: serde_json::json!({}),
        },
    }
}

/// The JSON body as `T`; serde's message names the missing, unknown or
/// mistyped field.
pub(super) fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("invalid body: {e}")))
}

/// [`body`], where an empty body means `{}` (every field optional).
pub(super) fn optional_body<T: DeserializeOwned + Default>(bytes: &Bytes) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    body(bytes)
}

/// The answer to a path no route serves.
pub(super) async fn no_route() -> ApiError {
    ApiError::NotFound("no such route; see /openapi.json".into())
}
