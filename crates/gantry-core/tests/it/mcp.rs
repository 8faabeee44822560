//! MCP tools offered to the model through the engine, against a real MCP
//! server (Python's `mcp` SDK, installed by `.ci/run`), over stdio.

use crate::common;

use std::process::Stdio;

use common::*;
use gantry_core::{EngineEventKind, EngineEventNotice};
use gantry_testkit::Step;
use gantry_tools::mcp::{McpServerConfig, McpStartupStatus, McpStartupUpdate, McpTransport};
use gantry_types::{ItemKind, ItemStatus, ThreadPolicy, TurnStatus};
use serde_json::json;

/// The Python that has the `mcp` package, or why not (an error under CI).
fn python() -> Option<String> {
    let py = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import mcp.server.mcpserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    let why = format!("Python's `mcp` package is not installed for `{py}`: run `.ci/run`");
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("SKIPPED: {why}");
    None
}

fn server(py: &str) -> McpServerConfig {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gantry-tools/tests/fixtures/mcp/server.py"
    );
    McpServerConfig::new(
        "py",
        McpTransport::Stdio {
            command: py.into(),
            args: vec![fixture.into(), "stdio".into()],
            env: Default::default(),
            cwd: None,
        },
    )
}

#[tokio::test]
async fn the_model_calls_an_mcp_tool_like_a_built_in_and_rules_apply() {
    let Some(py) = python() else { return };
    let h = Harness::new(vec![
        Step::tool_call("mcp__py__add", json!({"a": 2, "b": 40})),
        Step::tool_call("mcp__py__echo", json!({"message": "hi"})),
        Step::text("done"),
    ])
    .await;
    h.engine.mcp().add_server(server(&py)).await.unwrap();
    let mut events = h.engine.feeds().engine_events();
    let summary = h.engine.mcp().start_servers().await;
    assert_eq!(summary.ready, ["py"], "{summary:?}");
    // Startup progress reaches engine-event subscribers: starting, ready, summary.
    let mut kinds = Vec::new();
    while let Some(EngineEventNotice::Event(e)) = events.recv().await {
        let done = matches!(e.kind, EngineEventKind::McpStartupComplete(_));
        kinds.push(e.kind);
        if done {
            break;
        }
    }
    assert_eq!(
        kinds,
        vec![
            EngineEventKind::McpStartupUpdate(McpStartupUpdate {
                server_name: "py".into(),
                status: McpStartupStatus::Starting
            }),
            EngineEventKind::McpStartupUpdate(McpStartupUpdate {
                server_name: "py".into(),
                status: McpStartupStatus::Ready
            }),
            EngineEventKind::McpStartupComplete(summary.clone()),
        ]
    );
    let tools = h.engine.mcp().tools().await;
    assert!(tools.iter().any(|t| t.full_name == "mcp__py__add"));

    // Rules name MCP tools like built-ins: deny echo, allow the rest.
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.deny = vec!["mcp__py__echo".into()];
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();

    let (_, seen) = h.run_turn("add and echo").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let offered = offered_tools(&h.llm, 0);
    assert!(
        offered.iter().any(|t| t == "mcp__py__add") && offered.iter().any(|t| t == "shell"),
        "{offered:?}"
    );
    let result = |n: usize| last_tool_result(&h.llm, n);
    assert!(result(1).contains("42"), "{}", result(1));
    assert!(result(2).contains("denied by policy"), "{}", result(2));

    let view = h.view().await;
    let calls: Vec<_> = view.turns[0]
        .items
        .iter()
        .filter(|i| matches!(&i.kind, ItemKind::ToolCall { name, .. } if name.starts_with("mcp__")))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].status, ItemStatus::Completed);
    assert_eq!(calls[1].status, ItemStatus::Failed);

    // The server registration persists: a restarted engine knows it.
    let restarted = engine_at(h.dir.path(), &h.llm, gantry_core::EngineConfig::default()).await;
    assert_eq!(
        restarted
            .mcp()
            .servers()
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["py"]
    );
}
