//! The dashboard: plain HTML, CSS and JavaScript built into the binary
//! (nothing fetched at run time, no build step), served at `/`. It calls
//! the API from the same origin and follows events with `fetch` (so it can
//! send the bearer token and `Last-Event-ID` itself).

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

const INDEX: &str = include_str!("assets/index.html");
const FILES: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("assets/style.css"),
    ),
];

/// `GET /`.
pub(crate) async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

/// `GET /assets/{file}`.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match FILES.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => page(kind, body),
        None => ApiError::not_found(format!("no dashboard file {file}")).into_response(),
    }
}

fn page(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            // Only our own scripts and styles; nothing from elsewhere.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}
