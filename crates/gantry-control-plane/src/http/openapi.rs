//! `GET /openapi.json`: the API's OpenAPI 3.1 document, generated from the
//! routes' annotations and the wire types (as `proto-http`'s); a test checks
//! that every route of `mod.rs` is in it and nothing else is.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::{all_events, error, events, handlers};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Gantry control plane",
        version = "1",
        description = "Runners dial the control plane over companyhelm.runner.v1 gRPC; this API \
            creates agents and threads on them, sends messages, and follows threads (one, or \
            all of them from a cursor) over Server-Sent Events. Errors are \
            {\"error\": {\"code\", \"message\", \"details\"}}, the shape of Gantry's own HTTP \
            API. Access: requests must name this server in Host (the listen address, localhost \
            when listening on loopback, or a --allowed-host name; else 421) and, when a browser \
            sends Origin, come from the API's own origin (else 403). POSTs must be \
            Content-Type: application/json (else 415). Once any API token exists (`gantry \
            control-plane create-token`), and always when the API listens beyond loopback, every \
            route but GET /openapi.json and the dashboard (GET / and /assets/*) needs \
            Authorization: Bearer <token> (else 401); loopback-only with no token is open. A \
            read-only token (`create-token --read-only`) may only GET or HEAD (else 403)."
    ),
    paths(
        handlers::runners,
        handlers::agents, handlers::create_agent, handlers::agent, handlers::delete_agent,
        handlers::install_skill, handlers::agent_threads, handlers::create_thread,
        handlers::thread, handlers::delete_thread, handlers::send_message, handlers::interrupt,
        events::follow, all_events::follow_all,
        openapi_path, dashboard_index, dashboard_asset,
    ),
    components(schemas(events::ThreadEvent, all_events::ThreadsEvent)),
    modifiers(&Guarded),
    security(("bearer" = [])),
)]
struct ApiDoc;

/// The guard's answers, which every route may give: added here rather
/// than on each route.
struct Guarded;

impl Modify for Guarded {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        for item in openapi.paths.paths.values_mut() {
            let methods = [
                (&mut item.get, Method::Read),
                (&mut item.head, Method::Read),
                (&mut item.post, Method::Write { body: true }),
                (&mut item.put, Method::Write { body: true }),
                (&mut item.patch, Method::Write { body: true }),
                (&mut item.delete, Method::Write { body: false }),
            ];
            for (operation, method) in methods {
                if let Some(operation) = operation {
                    add_refusals(operation, method);
                }
            }
        }
    }
}

/// What a route does, for the refusals it may meet.
#[derive(Clone, Copy)]
enum Method {
    Read,
    Write { body: bool },
}

/// The guard's refusals of `operation`.
fn add_refusals(operation: &mut Operation, method: Method) {
    // An open route names no scheme: `security: [{}]`.
    let open = operation
        .security
        .as_ref()
        .is_some_and(|s| s.iter().all(|r| r == &Default::default()));
    let responses = &mut operation.responses.responses;
    let mut add = |status: &str, description: &str| {
        responses
            .entry(status.to_owned())
            .or_insert_with(|| refusal(description));
    };
    add(
        "421",
        "Host names no name this control plane answers to (the listen address, localhost \
         on loopback, an --allowed-host)",
    );
    let forbidden = match (open, method) {
        (false, Method::Write { .. }) => {
            "The request came from a page of another origin, or with a read-only token \
             (which may only GET or HEAD)"
        }
        _ => "The request came from a page of another origin",
    };
    add("403", forbidden);
    if !open {
        add(
            "401",
            "No token, or an unknown or revoked one (tokens exist, or the API listens \
             beyond loopback)",
        );
    }
    if let Method::Write { body: true } = method {
        add(
            "415",
            "The body is not declared Content-Type: application/json",
        );
    }
}

/// A refusal of the guard: the error body.
fn refusal(description: &str) -> RefOr<Response> {
    let body = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorBody")))
        .build();
    ResponseBuilder::new()
        .description(description)
        .content("application/json", body)
        .build()
        .into()
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
#[allow(dead_code)]
fn openapi_path() {}

/// The dashboard: runners, agents and their threads (its files need no token).
#[utoipa::path(get, path = "/", tag = "meta", security(()),
    responses((status = 200, description = "The dashboard's page", content_type = "text/html", body = String)))]
#[allow(dead_code)]
fn dashboard_index() {}

/// A file of the dashboard (JavaScript, CSS), built into the binary.
#[utoipa::path(get, path = "/assets/{file}", tag = "meta", security(()),
    params(("file" = String, Path, description = "File name")),
    responses((status = 200, description = "A static file", body = String),
        (status = 404, description = "No such file", body = error::ErrorBody)))]
#[allow(dead_code)]
fn dashboard_asset() {}

/// The document as JSON, built once.
pub(crate) fn document() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| ApiDoc::openapi().to_pretty_json().unwrap_or_default())
}

/// Serves the document.
pub(super) async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document())
}

#[cfg(test)]
mod tests {

    fn document() -> serde_json::Value {
        serde_json::from_str(super::document()).expect("the document is JSON")
    }

    #[test]
    fn every_routed_path_is_in_the_document_and_every_documented_one_is_routed() {
        let checked =
            gantry_web::routes::check_document(include_str!("mod.rs"), super::document(), 15);
        assert_eq!(checked, Ok(()));
    }

    #[test]
    fn routes_that_reach_a_runner_say_how_it_may_fail_there() {
        let doc = document();
        let error_body = serde_json::json!({"$ref": "#/components/schemas/ErrorBody"});
        for (path, method) in [
            ("/v1/agents", "post"),
            ("/v1/agents/{id}", "delete"),
            ("/v1/agents/{id}/skills", "post"),
            ("/v1/agents/{id}/threads", "post"),
            ("/v1/threads/{id}", "delete"),
            ("/v1/threads/{id}/messages", "post"),
            ("/v1/threads/{id}/interrupt", "post"),
        ] {
            let responses = &doc["paths"][path][method]["responses"];
            for status in ["502", "503", "504"] {
                let response = &responses[status];
                assert!(
                    response["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("runner")),
                    "{method} {path} {status}: {response}"
                );
                assert_eq!(
                    response["content"]["application/json"]["schema"], error_body,
                    "{method} {path} {status}"
                );
            }
        }
    }

    #[test]
    fn protected_routes_name_the_bearer_scheme_and_writes_the_read_only_rule() {
        let doc = document();
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
        let open = &doc["paths"]["/openapi.json"]["get"];
        assert_eq!(open["security"], serde_json::json!([{}]));
        assert!(open["responses"]["401"].is_null(), "{open}");
        let write = &doc["paths"]["/v1/agents"]["post"]["responses"];
        assert!(
            write["401"].is_object() && write["415"].is_object(),
            "{write}"
        );
        let forbidden = write["403"]["description"].as_str().unwrap_or_default();
        assert!(forbidden.contains("read-only"), "{forbidden}");
        let read = &doc["paths"]["/v1/agents"]["get"]["responses"]["403"]["description"];
        assert!(!read.as_str().unwrap_or_default().contains("read-only"));
        for schema in [
            "ErrorBody",
            "ThreadDetail",
            "NewThread",
            "ThreadEvent",
            "ThreadsEvent",
        ] {
            assert!(
                doc["components"]["schemas"][schema].is_object(),
                "{schema} is in the document"
            );
        }
    }
}
