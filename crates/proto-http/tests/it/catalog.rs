//! Agents, providers (no keys), models, MCP servers, jobs, todos, goals,
//! usage; and the OpenAPI document served.

use gantry_testkit::Step;
use serde_json::json;

use crate::common::{assert_error, shell, start};

#[tokio::test]
async fn agents_providers_models_and_mcp_servers_are_served_without_secrets() {
    let s = start(vec![]).await;
    let (status, agent) = s
        .post(
            "/v1/agents",
            json!({"id": "reviewer", "name": "Reviewer", "model": "mock/test-model"}),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    assert_eq!(s.get("/v1/agents/reviewer").await.1["name"], "Reviewer");
    assert_eq!(s.get("/v1/agents").await.1["items"][0]["id"], "reviewer");
    let (status, thread) = s.post("/v1/threads", json!({"agent": "reviewer"})).await;
    assert_eq!((status, &thread["agent"]), (201, &json!("reviewer")));
    assert_eq!(s.send("DELETE", "/v1/agents/reviewer", None).await.0, 204);
    assert_error(&s.get("/v1/agents/reviewer").await, 404, "not_found");
    assert_error(
        &s.send("DELETE", "/v1/agents/reviewer", None).await,
        404,
        "not_found",
    );

    let (status, providers) = s.get("/v1/providers").await;
    assert_eq!(status, 200);
    let text = providers.to_string();
    assert!(!text.contains("sk-test"), "no key, not even masked: {text}");
    assert_eq!(providers["items"][0]["has_api_key"], true);
    assert_eq!(s.get("/v1/providers/mock").await.1["name"], "mock");
    assert_error(&s.get("/v1/providers/ghost").await, 404, "not_found");
    let (_, models) = s.get("/v1/models").await;
    assert!(
        models["items"].as_array().unwrap().len() > 10,
        "the catalog"
    );

    assert_eq!(s.get("/v1/mcp/servers").await.1["items"], json!([]));
    let bad = s.post("/v1/mcp/servers", json!({"name": "x"})).await;
    assert_error(&bad, 422, "validation_failed");
    assert_error(
        &s.send("DELETE", "/v1/mcp/servers/ghost", None).await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn jobs_are_created_run_listed_changed_and_deleted() {
    let s = start(vec![]).await;
    let new = json!({
        "name": "hello",
        "schedule": "every 5 minutes",
        "action": {"kind": "command", "command": "echo hi"},
    });
    let (status, job) = s.post("/v1/jobs", new.clone()).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    assert_error(&s.post("/v1/jobs", new).await, 409, "conflict");
    let bad = s
        .post("/v1/jobs", json!({"name": "b", "schedule": "whenever", "action": {"kind": "command", "command": "true"}}))
        .await;
    assert_eq!(bad.1["error"]["details"]["field"], "schedule", "{}", bad.1);
    let action = s
        .post(
            "/v1/jobs",
            json!({"name": "c", "schedule": "every hour", "action": {"kind": "dance"}}),
        )
        .await;
    assert_eq!(action.1["error"]["details"]["field"], "action");
    let (status, run) = s.post(&format!("/v1/jobs/{id}/run"), json!({})).await;
    assert_eq!(status, 200, "{run}");
    let (_, runs) = s.get(&format!("/v1/jobs/{id}/runs")).await;
    assert_eq!(runs["items"].as_array().unwrap().len(), 1);
    let (status, paused) = s
        .send(
            "PATCH",
            &format!("/v1/jobs/{id}"),
            Some(json!({"status": "paused"})),
        )
        .await;
    assert_eq!(
        (status, &paused["status"]),
        (200, &json!("paused")),
        "{paused}"
    );
    let bad = s
        .send(
            "PATCH",
            &format!("/v1/jobs/{id}"),
            Some(json!({"status": "asleep"})),
        )
        .await;
    assert_eq!(bad.1["error"]["details"]["field"], "status");
    assert_eq!(s.get("/v1/jobs").await.1["items"][0]["id"], id.as_str());
    assert_eq!(
        s.send("DELETE", &format!("/v1/jobs/{id}"), None).await.0,
        204
    );
    assert_error(&s.get(&format!("/v1/jobs/{id}")).await, 404, "not_found");
    assert_error(
        &s.post("/v1/jobs/ghost/run", json!({})).await,
        404,
        "not_found",
    );
    assert_error(&s.get("/v1/jobs/ghost/runs").await, 404, "not_found");
}

#[tokio::test]
async fn todos_goals_and_usage_of_a_thread() {
    let s = start(vec![Step::text("done")]).await;
    let id = s.thread(json!({})).await;
    let todos = json!({"todos": [{"id": "1", "content": "write tests"}]});
    let (status, set) = s
        .send("PUT", &format!("/v1/threads/{id}/todos"), Some(todos))
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        s.get(&format!("/v1/threads/{id}/todos")).await.1["todos"][0]["content"],
        "write tests"
    );
    let dup = json!({"todos": [{"id": "1", "content": "a"}, {"id": "1", "content": "b"}]});
    assert_error(
        &s.send("PUT", &format!("/v1/threads/{id}/todos"), Some(dup))
            .await,
        422,
        "validation_failed",
    );
    let bad = json!({"todos": [{"content": "no id"}]});
    let got = s
        .send("PUT", &format!("/v1/threads/{id}/todos"), Some(bad))
        .await;
    assert_eq!(got.1["error"]["details"]["field"], "todos[0]");

    let goal = json!({"objective": "ship it", "token_budget": 1000});
    let (status, set) = s
        .send("PUT", &format!("/v1/threads/{id}/goal"), Some(goal))
        .await;
    assert_eq!(
        (status, &set["goal"]["objective"]),
        (200, &json!("ship it")),
        "{set}"
    );
    let zero = json!({"objective": "x", "token_budget": 0});
    let got = s
        .send("PUT", &format!("/v1/threads/{id}/goal"), Some(zero))
        .await;
    assert_eq!(got.1["error"]["details"]["field"], "token_budget");
    assert_eq!(
        s.get(&format!("/v1/threads/{id}/goal")).await.1["goal"]["objective"],
        "ship it"
    );
    let (_, cleared) = s
        .send("DELETE", &format!("/v1/threads/{id}/goal"), None)
        .await;
    assert_eq!(cleared["goal"]["objective"], "ship it");
    assert_eq!(
        s.get(&format!("/v1/threads/{id}/goal")).await.1["goal"],
        json!(null)
    );

    s.post(
        &format!("/v1/threads/{id}/messages?wait=true"),
        json!({"text": "go"}),
    )
    .await;
    let (_, usage) = s.get(&format!("/v1/threads/{id}/usage")).await;
    assert!(
        usage["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "{usage}"
    );
    let (_, total) = s.get("/v1/usage").await;
    assert_eq!(total["threads"], 1);
    assert_eq!(total["usage"], usage["usage"]);
    for path in ["todos", "goal", "usage", "approvals", "tasks"] {
        assert_error(
            &s.get(&format!("/v1/threads/ghost/{path}")).await,
            404,
            "not_found",
        );
    }
}

#[tokio::test]
async fn the_served_document_is_openapi_3_1() {
    let s = start(vec![]).await;
    let (status, doc) = s.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/threads/{id}/messages"]["post"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}

#[tokio::test]
async fn an_agent_job_runs_unattended_turns_in_a_thread_of_its_own() {
    // The first run's model wants a command its policy would ask about:
    // nobody is there, so it is refused and the turn goes on.
    let s = start(vec![
        shell("touch asked.txt"),
        Step::text("Nothing to report."),
        Step::text("Still nothing."),
    ])
    .await;
    let threads_before = s.get("/v1/threads").await.1["threads"]
        .as_array()
        .map_or(0, Vec::len);
    let bad = s
        .post(
            "/v1/jobs",
            json!({"name": "nightly", "schedule": "every day at 3am",
                "action": {"kind": "agent", "prompt": "report", "workspace": "/no/such/dir"}}),
        )
        .await;
    assert_error(&bad, 422, "validation_failed");
    assert_eq!(
        bad.1["error"]["details"]["field"], "action.workspace",
        "{}",
        bad.1
    );
    let new = json!({"name": "nightly", "schedule": "every day at 3am",
        "action": {"kind": "agent", "prompt": "Report on the repository.",
            "instructions": "Be brief.", "policy": {"approval": "untrusted"}}});
    let (status, job) = s.post("/v1/jobs", new.clone()).await;
    assert_eq!(status, 201, "{job}");
    // A second job of that name is refused before it makes a thread.
    assert_error(&s.post("/v1/jobs", new).await, 409, "conflict");
    let (_, threads) = s.get("/v1/threads").await;
    assert_eq!(
        threads["threads"].as_array().map_or(0, Vec::len),
        threads_before + 1,
        "one thread, the job's: {threads}"
    );
    assert_eq!(job["action"]["kind"], "prompt", "{job}");
    let thread = job["action"]["thread_id"]
        .as_str()
        .expect("the job's thread")
        .to_owned();
    let id = job["id"].as_str().expect("id").to_owned();

    let (status, run) = s.post(&format!("/v1/jobs/{id}/run"), json!({})).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["stdout"], "Nothing to report.", "{run}");
    assert!(
        !s.workspace.join("asked.txt").exists(),
        "the command never ran"
    );
    let (_, view) = s.get(&format!("/v1/threads/{thread}")).await;
    let turn = &view["turns"][0];
    assert_eq!(turn["status"], "completed", "{view}");
    assert!(
        turn["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["type"] == "command_execution" && i["status"] != "completed"),
        "the command is reported as not run: {turn}"
    );
    assert_eq!(
        view["pending_approvals"],
        json!([]),
        "nothing waits: {view}"
    );

    // A new prompt and instructions; its runs stay in the same thread.
    let (status, changed) = s
        .send(
            "PATCH",
            &format!("/v1/jobs/{id}"),
            Some(
                json!({"action": {"kind": "agent", "prompt": "Anything new?",
                "instructions": "Be briefer."}}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["action"]["thread_id"], thread.as_str(), "{changed}");
    let moved = s
        .send(
            "PATCH",
            &format!("/v1/jobs/{id}"),
            Some(json!({"action": {"kind": "agent", "prompt": "x", "workspace": "/"}})),
        )
        .await;
    assert_error(&moved, 422, "validation_failed");
    let (_, run) = s.post(&format!("/v1/jobs/{id}/run"), json!({})).await;
    assert_eq!(run["stdout"], "Still nothing.", "{run}");
    let (_, view) = s.get(&format!("/v1/threads/{thread}")).await;
    assert_eq!(view["turns"].as_array().map_or(0, Vec::len), 2, "{view}");
    let asked = &s.llm.requests()[2].body;
    let messages = asked["messages"].to_string();
    assert!(messages.contains("Anything new?"), "{messages}");
    assert!(messages.contains("Be briefer."), "{messages}");
}
