//! A language server runs its workspace's code (build scripts, plugins),
//! which the model may have written: so it runs confined as a
//! `workspace-write` command is. A stand-in server (a fixture that runs
//! the workspace's `plugin.py` at start, as real servers run build
//! scripts) gets a plugin that tries to write outside the workspace, to
//! read the data dir's key file and to open a TCP connection; none may.

use std::path::Path;
use std::sync::Arc;

use gantry_core::{EngineBuilder, EngineConfig, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_tools::lsp::{LspCommand, LspManager};
use serde_json::Value;

const PLUGIN: &str = r#"import json, socket
report = {}
def attempt(name, action):
    try:
        action()
        report[name] = "done"
    except OSError as e:
        report[name] = f"{type(e).__name__}: {e}"
attempt("write_outside", lambda: open(OUTSIDE, "w").write("escaped"))
attempt("read_key", lambda: open(KEY).read())
attempt("connect", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=5).close())
with open("report.json", "w") as f:
    json.dump(report, f)
"#;

#[tokio::test]
async fn a_language_server_runs_confined_like_a_workspace_write_command() {
    if gantry_tools::SandboxSupport::probe()
        .check(gantry_types::SandboxMode::WorkspaceWrite)
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI machines enforce workspace-write"
        );
        eprintln!("SKIPPED: this machine cannot enforce workspace-write");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::create_dir_all(&data).expect("data dir");
    let key = data.join("secret.key");
    std::fs::write(&key, "the key that seals every API key").expect("key");
    let outside = dir.path().join("outside.txt");
    // Something to connect to, which an unconfined plugin would reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("addr").port();
    let plugin = format!(
        "OUTSIDE = {outside:?}\nKEY = {key:?}\nPORT = {port}\n{PLUGIN}",
        outside = outside.display().to_string(),
        key = key.display().to_string(),
    );
    std::fs::write(ws.join("plugin.py"), plugin).expect("plugin");

    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lsp/planted_server.py");
    let lsp = LspManager::new();
    lsp.set_command(
        "python",
        LspCommand::new("python3", &[fixture.to_str().expect("utf-8 path")]),
    )
    .expect("python is a default language");
    let client = OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9")).expect("client");
    let store = SqliteStore::open(&data.join("gantry.db"))
        .await
        .expect("store");
    let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
        .config(EngineConfig {
            data_dir: Some(data.clone()),
            ..EngineConfig::default()
        })
        .lsp(lsp)
        .start()
        .await
        .expect("engine");

    engine
        .lsp()
        .start_server("python", &ws)
        .await
        .expect("the server starts");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join("report.json")).expect("the plugin ran and reported"),
    )
    .expect("a JSON report");
    for attempt in ["write_outside", "read_key", "connect"] {
        let outcome = report[attempt].as_str().unwrap_or_default();
        assert!(
            outcome.starts_with("PermissionError"),
            "{attempt} must be denied, got {outcome:?} ({report})"
        );
    }
    assert!(
        !outside.exists(),
        "nothing was written outside the workspace"
    );
    engine
        .lsp()
        .stop_server("python", None)
        .await
        .expect("stops");
}
