//! `GET /openapi.json`: the API's OpenAPI 3.1 document, written by hand
//! next to this file (a test checks that it lists every route).

use axum::http::header;
use axum::response::IntoResponse;

/// The document.
const DOCUMENT: &str = include_str!("openapi.json");

/// Serves the document.
pub(super) async fn document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT)
}
