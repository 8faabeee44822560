//! The dashboard (`gantry_web::dashboard`, shared with the control plane),
//! served at `/` as an engine's.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use gantry_web::dashboard::{self, Api};

use crate::error::ApiError;

/// `GET /`.
pub(crate) async fn index() -> Response {
    dashboard::index(Api::Engine)
}

/// `GET /assets/{file}`.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    dashboard::asset(&file)
        .unwrap_or_else(|| ApiError::not_found(format!("no dashboard file {file}")).into_response())
}
