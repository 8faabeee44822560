//! The dashboard: plain HTML, CSS and JavaScript built into the binary
//! (nothing fetched at run time, no build step), served at `/`. It calls
//! the API from the same origin and follows events with `fetch` (so it can
//! send the bearer token and `Last-Event-ID` itself). One page for both
//! APIs: the body says which one serves it, and the script shows what that
//! API has (threads and approvals of an engine; runners, agents and their
//! threads of a control plane).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("assets/index.html");
const FILES: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
    (
        "runners.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/runners.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("assets/style.css"),
    ),
];

/// The API a dashboard is served by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `gantry serve --http-addr`: an engine's threads and approvals.
    Engine,
    /// `gantry control-plane serve`: runners, agents and their threads.
    ControlPlane,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Engine => "engine",
            Api::ControlPlane => "control-plane",
        }
    }
}

/// `GET /`: the page, saying which API serves it.
pub fn index(api: Api) -> Response {
    let body = INDEX.replace(
        "data-api=\"engine\"",
        &format!("data-api=\"{}\"", api.name()),
    );
    respond("text/html; charset=utf-8", body)
}

/// `GET /assets/{file}`; `None` for a file the dashboard does not have.
pub fn asset(file: &str) -> Option<Response> {
    FILES
        .iter()
        .find(|(name, _, _)| *name == file)
        .map(|(_, kind, body)| respond(kind, *body))
}

fn respond(kind: &'static str, body: impl IntoResponse) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_says_which_api_serves_it() {
        assert!(INDEX.contains("data-api=\"engine\""), "the placeholder");
        for (api, name) in [
            (Api::Engine, "engine"),
            (Api::ControlPlane, "control-plane"),
        ] {
            let body = INDEX.replace("data-api=\"engine\"", &format!("data-api=\"{name}\""));
            assert!(body.contains(&format!("data-api=\"{}\"", api.name())));
        }
        assert!(asset("app.js").is_some() && asset("runners.js").is_some());
        assert!(asset("../Cargo.toml").is_none());
    }
}
