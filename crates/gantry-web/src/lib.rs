//! What Gantry's two HTTP APIs share, so they cannot drift apart: the
//! checks every request passes before a route runs (`guard.rs`: host,
//! origin, bearer syntax, JSON bodies), the dashboard, served at `/` by
//! `gantry serve --http-addr` and by the control plane (`dashboard.rs`,
//! the files in `assets/`), the Prometheus text format of their `/metrics`
//! (`prometheus.rs`), the W3C `traceparent` a request may carry
//! (`trace_context.rs`), and reading a router's routes from its source for
//! the OpenAPI checks (`routes.rs`). Each API keeps its own tokens and
//! error shape; this crate knows neither the engine nor the control plane.

pub mod dashboard;
pub mod guard;
pub mod prometheus;
pub mod routes;
pub mod trace_context;
