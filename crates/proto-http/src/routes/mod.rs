//! The routes, one module per subject; each reads its input, calls the
//! engine's public API, and answers with a view (JSON; Prometheus text for
//! `/metrics`) and the status that fits.

pub(crate) mod approvals;
pub(crate) mod catalog;
pub(crate) mod checkpoints;
pub(crate) mod jobs;
pub(crate) mod metrics;
pub(crate) mod structured;
pub(crate) mod thread_state;
pub(crate) mod threads;
pub(crate) mod trajectory;
pub(crate) mod turns;
pub(crate) mod user_input;

use axum::Json;
use axum::http::StatusCode;

use crate::error::ApiError;

/// What a route answers.
pub(crate) type Answer<T> = Result<Json<T>, ApiError>;

/// What a creating route answers: `201` and the new thing.
pub(crate) type Created<T> = Result<(StatusCode, Json<T>), ApiError>;
