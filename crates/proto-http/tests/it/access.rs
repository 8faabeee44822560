//! Who may call: tokens (loopback open only while none exists), read-only
//! tokens, Host and Origin, content types; the open routes.

use serde_json::json;

use crate::common::{assert_error, start};

#[tokio::test]
async fn loopback_is_open_until_a_token_exists_then_every_call_needs_one() {
    let mut s = start(vec![]).await;
    assert_eq!(s.get("/v1/threads").await.0, 200, "open: no token exists");
    let (_, writer) = s.tokens.create("writer", false).unwrap();
    let (_, reader) = s.tokens.create("reader", true).unwrap();
    assert_error(&s.get("/v1/threads").await, 401, "unauthorized");
    assert_eq!(s.get("/openapi.json").await.0, 200, "the document is open");
    assert_eq!(s.get("/healthz").await.0, 200);
    assert_eq!(s.http.get(s.url("/")).send().await.unwrap().status(), 200);
    s.token = Some("not-a-token".into());
    assert_error(&s.get("/v1/threads").await, 401, "unauthorized");
    s.token = Some(reader);
    assert_eq!(s.get("/v1/threads").await.0, 200);
    assert_error(&s.post("/v1/threads", json!({})).await, 403, "forbidden");
    s.token = Some(writer);
    assert_eq!(s.post("/v1/threads", json!({})).await.0, 201);
    s.tokens.revoke("writer").unwrap();
    assert_error(&s.get("/v1/threads").await, 401, "unauthorized");
}

#[tokio::test]
async fn other_hosts_origins_and_content_types_are_refused() {
    let s = start(vec![]).await;
    let get = |host: Option<&str>, origin: Option<&str>| {
        let mut req = s.http.get(s.url("/v1/threads"));
        if let Some(h) = host {
            req = req.header("host", h);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req
    };
    let port = s.addr.port();
    let resp = get(Some("evil.example"), None).send().await.unwrap();
    assert_error(&crate::common::read(resp).await, 421, "misdirected");
    let resp = get(None, Some("http://evil.example")).send().await.unwrap();
    assert_error(&crate::common::read(resp).await, 403, "forbidden");
    let own = format!("http://localhost:{port}");
    let resp = get(Some(&format!("localhost:{port}")), Some(&own))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "the dashboard's own origin");
    let resp = s
        .http
        .post(s.url("/v1/threads"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_error(
        &crate::common::read(resp).await,
        415,
        "unsupported_media_type",
    );
    let page = s.http.get(s.url("/")).send().await.unwrap();
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("'self'")
    );
    assert!(page.text().await.unwrap().contains("/assets/app.js"));
    for file in ["app.js", "style.css"] {
        let resp = s
            .http
            .get(s.url(&format!("/assets/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{file}");
    }
    let resp = s
        .http
        .get(s.url("/assets/secret.txt"))
        .send()
        .await
        .unwrap();
    assert_error(&crate::common::read(resp).await, 404, "not_found");
}
