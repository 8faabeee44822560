//! `GET /openapi.json`: the API's OpenAPI 3.1 document, generated from the
//! routes' annotations and the wire types (a test checks that every route
//! of `router.rs` is in it).

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    approvals, catalog, checkpoints, jobs, metrics, structured, thread_state, threads, trajectory,
    turns, user_input,
};
use crate::sse;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Gantry HTTP API",
        version = "1",
        description = "Gantry's own API over its engine: threads, turns, approvals, questions \
            to the user, catalog, jobs; events over Server-Sent Events (Last-Event-ID resumes). Errors are \
            {\"error\": {\"code\", \"message\", \"details\"}}. Requests must name this server \
            in Host (else 421) and, from a browser, come from its own origin (else 403). Once a \
            token exists (`gantry tokens create`), and always beyond loopback, every route but \
            /, /assets/*, /healthz and /openapi.json needs Authorization: Bearer <token> \
            (else 401); a read-only token may only GET (else 403). Request bodies must be \
            Content-Type: application/json (else 415)."
    ),
    paths(
        threads::health, metrics::scrape, threads::list, threads::create, threads::read, threads::fork,
        checkpoints::list, checkpoints::rewind,
        threads::archive, threads::unarchive, threads::delete,
        turns::send, structured::generate, turns::interrupt, turns::pause, turns::resume,
        approvals::pending, approvals::of_thread, approvals::answer, approvals::tasks,
        approvals::complete, user_input::of_thread, user_input::answer,
        thread_state::todos, thread_state::set_todos, thread_state::goal,
        thread_state::set_goal, thread_state::clear_goal, thread_state::usage,
        thread_state::total_usage, trajectory::trajectory,
        sse::thread_events, sse::all_events,
        catalog::agents, catalog::save_agent, catalog::agent, catalog::delete_agent,
        catalog::providers, catalog::provider, catalog::models, catalog::mcp_servers,
        catalog::add_mcp_server, catalog::remove_mcp_server,
        jobs::list, jobs::create, jobs::get, jobs::update, jobs::delete, jobs::run_now,
        jobs::history,
        openapi_path, dashboard_index, dashboard_asset,
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
struct ApiDoc;

/// The bearer scheme every protected route names.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
#[allow(dead_code)]
fn openapi_path() {}

/// The dashboard.
#[utoipa::path(get, path = "/", tag = "meta", security(()),
    responses((status = 200, description = "The dashboard's page", content_type = "text/html", body = String)))]
#[allow(dead_code)]
fn dashboard_index() {}

/// The dashboard's static files.
#[utoipa::path(get, path = "/assets/{file}", tag = "meta", security(()),
    params(("file" = String, Path, description = "File name")),
    responses((status = 200, description = "A static file", body = String),
        (status = 404, description = "No such file", body = crate::error::ErrorBody)))]
#[allow(dead_code)]
fn dashboard_asset() {}

/// The document as JSON.
pub fn document() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| ApiDoc::openapi().to_pretty_json().unwrap_or_default())
}

/// Serves the document.
pub(crate) async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document())
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_served_route_is_in_the_document_and_every_documented_route_is_served() {
        let checked =
            gantry_web::routes::check_document(include_str!("router.rs"), super::document(), 40);
        assert_eq!(checked, Ok(()));
    }

    #[test]
    fn protected_routes_name_the_bearer_scheme_and_open_ones_none() {
        let doc: serde_json::Value = serde_json::from_str(super::document()).unwrap();
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
        assert_eq!(
            doc["paths"]["/healthz"]["get"]["security"],
            serde_json::json!([{}])
        );
    }
}
