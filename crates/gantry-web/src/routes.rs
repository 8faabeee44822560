//! The routes an axum router serves, read from its source text, so each
//! API's tests can check its OpenAPI document lists exactly those
//! ([`check_document`]).

use std::collections::BTreeSet;

/// Methods a route may serve.
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every `(method, path)` that `source` routes, from its
/// `.route("PATH", get(..).post(..))` calls.
pub fn routed(source: &str) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for chunk in source.split(".route(").skip(1) {
        let path = chunk.split('"').nth(1).unwrap_or_default().to_owned();
        // The handlers end where the route's parentheses close.
        let mut depth = 1;
        let end = chunk
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(chunk.len(), |(i, _)| i);
        let handlers = &chunk[..end];
        for method in METHODS {
            let called = [" ", ".", "(", "::"]
                .iter()
                .any(|before| handlers.contains(&format!("{before}{method}(")));
            if called {
                routes.insert((method.to_owned(), path.clone()));
            }
        }
    }
    routes
}

/// Every `(method, path)` an OpenAPI document (JSON) lists.
fn documented(document: &str) -> Result<BTreeSet<(String, String)>, String> {
    let doc: serde_json::Value =
        serde_json::from_str(document).map_err(|e| format!("the document is not JSON: {e}"))?;
    if doc["openapi"] != "3.1.0" {
        return Err(format!("not OpenAPI 3.1.0: {}", doc["openapi"]));
    }
    let paths = doc["paths"]
        .as_object()
        .ok_or("the document has no paths")?;
    let mut pairs = BTreeSet::new();
    for (path, item) in paths {
        let item = item.as_object().ok_or("a path item is not an object")?;
        for method in item.keys() {
            pairs.insert((method.clone(), path.clone()));
        }
    }
    Ok(pairs)
}

/// Whether `document` (OpenAPI 3.1 JSON) lists exactly the routes the
/// router `source` serves, of which there must be more than `at_least`
/// (so a router the reader cannot read fails too); else what differs.
pub fn check_document(source: &str, document: &str, at_least: usize) -> Result<(), String> {
    let documented = documented(document)?;
    let served = routed(source);
    if served.len() <= at_least {
        return Err(format!("the route table was not read: {served:?}"));
    }
    let missing: Vec<_> = served.difference(&documented).collect();
    if !missing.is_empty() {
        return Err(format!("served but not in /openapi.json: {missing:?}"));
    }
    let unserved: Vec<_> = documented.difference(&served).collect();
    if !unserved.is_empty() {
        return Err(format!("in /openapi.json but not served: {unserved:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_document, routed};

    #[test]
    fn a_document_must_list_exactly_the_routes_served() {
        let source = r#".route("/a", get(a).post(b))"#;
        let doc = |paths: &str| format!(r#"{{"openapi": "3.1.0", "paths": {paths}}}"#);
        let both = doc(r#"{"/a": {"get": {}, "post": {}}}"#);
        assert_eq!(check_document(source, &both, 1), Ok(()));
        assert!(
            check_document(source, &both, 2).is_err(),
            "too few routes read"
        );
        let missing = check_document(source, &doc(r#"{"/a": {"get": {}}}"#), 1);
        assert!(missing.is_err_and(|e| e.contains("post")));
        let extra = doc(r#"{"/a": {"get": {}, "post": {}}, "/b": {"get": {}}}"#);
        assert!(check_document(source, &extra, 1).is_err_and(|e| e.contains("/b")));
    }

    #[test]
    fn each_method_of_each_route_is_read_and_nothing_else() {
        let source = r#"
            Router::new()
                .route("/v1/things", get(list).post(create))
                .route("/v1/things/{id}", routing::delete(remove))
                .route("/v1/events", get(events::stream))
                .with_state(state)
        "#;
        let pairs: Vec<(&str, &str)> = vec![
            ("delete", "/v1/things/{id}"),
            ("get", "/v1/events"),
            ("get", "/v1/things"),
            ("post", "/v1/things"),
        ];
        let read = routed(source);
        let read: Vec<(&str, &str)> = read.iter().map(|(m, p)| (m.as_str(), p.as_str())).collect();
        assert_eq!(read, pairs);
    }
}
