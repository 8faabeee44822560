//! The replica's operations endpoints, beside the API and outside its
//! guard (a load balancer or Prometheus calls them by address, with no
//! token): `/healthz` (the process answers), `/readyz` (it can take work:
//! not draining, and its store answers) and
//! `/metrics` (Prometheus text). They say no id, name or secret.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::ControlPlane;
use crate::metrics::Gauges;

/// `/healthz`, `/readyz` and `/metrics`.
pub(crate) fn router(cp: ControlPlane) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(cp)
}

/// Alive: the process serves HTTP.
async fn healthz() -> Response {
    (StatusCode::OK, axum::Json(json!({"status": "ok"}))).into_response()
}

/// Ready for work: `200` when not draining and every dependency answers,
/// else `503` naming what is not.
async fn readyz(State(cp): State<ControlPlane>) -> Response {
    let mut checks = serde_json::Map::new();
    let mut ready = true;
    if cp.is_draining() {
        ready = false;
        checks.insert("draining".into(), json!(true));
    }
    match cp.inner.store.ping().await {
        Ok(()) => checks.insert("store".into(), json!("ok")),
        Err(e) => {
            ready = false;
            checks.insert("store".into(), json!(e.to_string()))
        }
    };
    if let Some(cluster) = &cp.inner.cluster {
        if cluster.is_connected() {
            checks.insert("nats".into(), json!("ok"));
        } else {
            ready = false;
            checks.insert("nats".into(), json!("not connected"));
        }
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    checks.insert(
        "status".into(),
        json!(if ready { "ready" } else { "not ready" }),
    );
    (status, axum::Json(serde_json::Value::Object(checks))).into_response()
}

/// Every series in Prometheus text.
async fn metrics(State(cp): State<ControlPlane>) -> Response {
    let inner = &cp.inner;
    let gauges = Gauges {
        runners_connected: inner.registry.here(),
        requests_in_flight: inner.dispatcher.in_flight(),
        draining: cp.is_draining(),
        nats_lag: inner.cluster.as_ref().map(crate::nats::Cluster::lag),
    };
    let body = inner.metrics.render(&gauges);
    (
        [(header::CONTENT_TYPE, gantry_web::prometheus::CONTENT_TYPE)],
        body,
    )
        .into_response()
}
