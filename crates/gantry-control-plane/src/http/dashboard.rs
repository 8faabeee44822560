//! The dashboard at `/` (`gantry_web::dashboard`, shared with `gantry
//! serve`), as a control plane's: runners, agents and their threads.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use gantry_web::dashboard::{self, Api};

use crate::error::ApiError;

/// `GET /`.
pub(super) async fn index() -> Response {
    dashboard::index(Api::ControlPlane)
}

/// `GET /assets/{file}`.
pub(super) async fn asset(Path(file): Path<String>) -> Response {
    dashboard::asset(&file)
        .unwrap_or_else(|| ApiError::NotFound(format!("no dashboard file {file}")).into_response())
}
