//! The routes an axum router serves, read from its source text, so each
//! API's tests can check its OpenAPI document lists exactly those.

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

#[cfg(test)]
mod tests {
    use super::routed;

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
