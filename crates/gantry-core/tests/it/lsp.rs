//! Language servers through the engine, against a real `pylsp`
//! (python-lsp-server, installed by `.ci/run`) on a small Python project
//! the test writes.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gantry_core::{
    CreateThread, Engine, EngineBuilder, EngineConfig, EngineError, EngineEventKind,
    EngineEventNotice, EngineEvents, SingleModel,
};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_tools::lsp::{LspCommand, LspManager};
use gantry_types::lsp::{LspEvent, LspSeverity};
use gantry_types::{Thread, TurnStatus};
use serde_json::json;

/// A hang guard only: every wait below ends on an event.
const HANG_GUARD: Duration = Duration::from_secs(120);

const APP: &str = r#"import os


def greet(name):
    """Return a friendly greeting."""
    return "hello " + name


def main():
    print(greet("world"))
    print(greet("again"))
"#;

const BROKEN: &str = "def f():\n    return undefined_thing\n";

/// Where `greet` is called first: line 9, character 10 (0-indexed).
const CALL: (u32, u32) = (9, 10);

/// The `pylsp` to use, or why not (an error under CI).
fn pylsp() -> Option<String> {
    let program = std::env::var("GANTRY_TEST_PYLSP").unwrap_or_else(|_| "pylsp".into());
    if gantry_tools::lsp::find_program(&program).is_some() {
        return Some(program);
    }
    let why = format!("`{program}` (python-lsp-server) is not installed: run `.ci/run`");
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("SKIPPED: {why}");
    None
}

/// A manager whose `python` is `program`.
fn manager(program: &str) -> LspManager {
    let lsp = LspManager::new();
    lsp.set_command("python", LspCommand::new(program, &[]))
        .expect("python is a default language");
    lsp
}

struct Setup {
    engine: Engine,
    llm: MockLlm,
    _dir: tempfile::TempDir,
    thread: Thread,
    ws: PathBuf,
}

async fn setup(program: &str, steps: Vec<Step>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("workspace");
    std::fs::write(ws.join("app.py"), APP).expect("app.py");
    std::fs::write(ws.join("broken.py"), BROKEN).expect("broken.py");
    let ws = std::fs::canonicalize(&ws).expect("canonical workspace");
    let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
    let mut config = ClientConfig::new(llm.base_url());
    config.retry = fast_retries();
    let client = OpenAiChatClient::new(config).expect("client");
    let store = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .expect("store");
    let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
        .lsp(manager(program))
        .config(EngineConfig::default())
        .start()
        .await
        .expect("engine");
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: ws.clone(),
            model: Some("test-model".into()),
            ..Default::default()
        })
        .await
        .expect("thread");
    Setup {
        engine,
        llm,
        _dir: dir,
        thread,
        ws,
    }
}

/// The next language-server event.
async fn next_lsp_event(events: &mut EngineEvents) -> LspEvent {
    let wait = async {
        loop {
            match events.recv().await {
                Some(EngineEventNotice::Event(e)) => {
                    if let EngineEventKind::Lsp(ev) = e.kind {
                        return ev;
                    }
                }
                Some(EngineEventNotice::Lagged { .. }) => continue,
                None => panic!("the engine's event stream ended"),
            }
        }
    };
    tokio::time::timeout(HANG_GUARD, wait)
        .await
        .expect("a language-server event")
}

fn lines_of(locations: &[gantry_types::lsp::LspLocation], file: &Path) -> Vec<u32> {
    let uri = format!("file://{}", file.display());
    let mut lines: Vec<u32> = locations
        .iter()
        .filter(|l| l.uri == uri)
        .map(|l| l.range.start.line)
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn hover_definition_references_and_diagnostics_come_from_a_real_server() {
    let Some(pylsp) = pylsp() else { return };
    let s = setup(&pylsp, vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let info = s
        .engine
        .lsp()
        .start_thread_server(&s.thread.id, "Python")
        .await
        .expect("pylsp starts");
    assert!(info.running, "{info:?}");
    assert_eq!(info.language, "python");
    assert_eq!(info.name, "pylsp");
    assert!(info.version.is_some(), "pylsp reports its version");
    assert_eq!(Path::new(&info.root), s.ws);
    assert_eq!(
        next_lsp_event(&mut events).await,
        LspEvent::Started {
            server: info.clone()
        }
    );
    assert_eq!(s.engine.lsp().servers(), vec![info.clone()]);
    // Starting it again is a no-op: the same server.
    let again = s
        .engine
        .lsp()
        .start_server("py", &s.ws)
        .await
        .expect("start again");
    assert_eq!(again.pid, info.pid);

    let app = s.ws.join("app.py");
    let hover = s
        .engine
        .lsp()
        .hover(&app, CALL.0, CALL.1)
        .await
        .expect("hover");
    assert!(hover.found, "{hover:?}");
    assert!(
        hover.content.contains("greet(name)") && hover.content.contains("friendly greeting"),
        "the signature and docstring: {}",
        hover.content
    );
    // Nothing to show on a blank line.
    let blank = s.engine.lsp().hover(&app, 1, 0).await.expect("hover");
    assert!(!blank.found && blank.content.is_empty(), "{blank:?}");

    // A relative path is resolved under the server's root.
    let defs = s
        .engine
        .lsp()
        .definition(Path::new("app.py"), CALL.0, CALL.1)
        .await
        .expect("definition");
    assert_eq!(defs.len(), 1, "{defs:?}");
    assert_eq!(defs[0].uri, format!("file://{}", app.display()));
    assert_eq!(
        (defs[0].range.start.line, defs[0].range.start.character),
        (3, 4),
        "the `greet` of `def greet` (0-indexed)"
    );

    let with = s
        .engine
        .lsp()
        .references(&app, CALL.0, CALL.1, true)
        .await
        .expect("references");
    assert_eq!(lines_of(&with, &app), [3, 9, 10]);
    let without = s
        .engine
        .lsp()
        .references(&app, CALL.0, CALL.1, false)
        .await
        .expect("references");
    assert_eq!(lines_of(&without, &app), [9, 10]);

    // pylsp has no workspace symbol search: said plainly.
    let err = s.engine.lsp().symbols("greet", 0).await.unwrap_err();
    assert!(
        matches!(&err, EngineError::Unsupported(m) if m.contains("pylsp") && m.contains("does not support workspace symbols")),
        "{err}"
    );

    // Diagnostics of one file: pyflakes through pylsp.
    let broken = s.ws.join("broken.py");
    let diags = s
        .engine
        .lsp()
        .diagnostics(Some(&broken))
        .await
        .expect("diagnostics");
    let undefined = diags
        .iter()
        .find(|d| d.message.contains("undefined name 'undefined_thing'"))
        .unwrap_or_else(|| panic!("pyflakes' undefined name: {diags:?}"));
    assert_eq!(undefined.severity, LspSeverity::Error);
    assert_eq!(undefined.source.as_deref(), Some("pyflakes"));
    assert_eq!(undefined.range.start.line, 1);
    let app_diags = s
        .engine
        .lsp()
        .diagnostics(Some(&app))
        .await
        .expect("diagnostics");
    assert!(
        app_diags
            .iter()
            .any(|d| d.message.contains("'os' imported but unused")
                && d.severity == LspSeverity::Warning),
        "{app_diags:?}"
    );

    // A fixed file is checked again as it is on disk now.
    std::fs::write(&broken, "def f():\n    return 1\n").expect("fix broken.py");
    let fixed = s
        .engine
        .lsp()
        .diagnostics(Some(&broken))
        .await
        .expect("diagnostics");
    assert!(
        fixed.iter().all(|d| !d.message.contains("undefined")),
        "{fixed:?}"
    );
    // All diagnostics: every file the server checked.
    let all = s.engine.lsp().diagnostics(None).await.expect("diagnostics");
    assert!(
        all.iter().any(|d| d.message.contains("'os' imported")),
        "{all:?}"
    );
    assert!(
        all.iter().all(|d| !d.message.contains("undefined")),
        "{all:?}"
    );

    // Files outside every server's root are not served.
    let outside = tempfile::tempdir().expect("tempdir");
    let stray = outside.path().join("stray.py");
    std::fs::write(&stray, "x = 1\n").expect("stray.py");
    let err = s.engine.lsp().hover(&stray, 0, 0).await.unwrap_err();
    assert!(
        matches!(err, EngineError::NotFound { .. }),
        "{err}: a file outside the root"
    );

    assert!(
        s.engine
            .lsp()
            .stop_server("python", None)
            .await
            .expect("stop")
    );
    assert_eq!(
        next_lsp_event(&mut events).await,
        LspEvent::Stopped {
            language: "python".into(),
            root: info.root.clone()
        }
    );
    assert!(s.engine.lsp().servers().is_empty());
    assert!(
        !s.engine
            .lsp()
            .stop_server("python", None)
            .await
            .expect("stop")
    );
}

#[tokio::test]
async fn a_missing_server_is_named_and_a_crashed_one_is_reported_and_restarts() {
    let Some(pylsp) = pylsp() else { return };
    let s = setup("gantry-no-such-pylsp", vec![]).await;
    let err = s
        .engine
        .lsp()
        .start_server("python", &s.ws)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Unsupported(_)),
        "a missing server is the machine's lack, not a bad request: {err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("`gantry-no-such-pylsp`") && msg.contains("not installed"),
        "{msg}"
    );
    let err = s
        .engine
        .lsp()
        .start_server("cobol", &s.ws)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("known languages: "), "{err}");
    assert!(s.engine.lsp().servers().is_empty());

    let s = setup(&pylsp, vec![]).await;
    let mut events = s.engine.feeds().engine_events();
    let info = s
        .engine
        .lsp()
        .start_server("python", &s.ws)
        .await
        .expect("pylsp starts");
    assert!(matches!(
        next_lsp_event(&mut events).await,
        LspEvent::Started { .. }
    ));
    let pid = info.pid.expect("a running server has a pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill pylsp");
    let LspEvent::Crashed { server } = next_lsp_event(&mut events).await else {
        panic!("a crash is reported");
    };
    assert!(!server.running && server.pid.is_none(), "{server:?}");
    assert!(
        server
            .error
            .as_deref()
            .is_some_and(|e| e.contains("exited")),
        "{server:?}"
    );
    assert_eq!(s.engine.lsp().servers(), vec![server.clone()]);
    let err = s
        .engine
        .lsp()
        .hover(&s.ws.join("app.py"), CALL.0, CALL.1)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Unavailable(m) if m.contains("not running") && m.contains("start it again")),
        "{err}"
    );

    // Starting it again restarts it.
    let restarted = s
        .engine
        .lsp()
        .start_server("python", &s.ws)
        .await
        .expect("restart");
    assert!(
        restarted.running && restarted.pid != info.pid,
        "{restarted:?}"
    );
    assert!(matches!(
        next_lsp_event(&mut events).await,
        LspEvent::Started { .. }
    ));
    let hover = s
        .engine
        .lsp()
        .hover(&s.ws.join("app.py"), CALL.0, CALL.1)
        .await
        .expect("hover after restart");
    assert!(hover.content.contains("friendly greeting"), "{hover:?}");
    let again = s
        .engine
        .lsp()
        .restart_server("python", &s.ws)
        .await
        .expect("restart");
    assert!(again.running && again.pid != restarted.pid);
}

#[tokio::test]
async fn the_model_is_offered_lsp_tools_while_a_server_runs_and_gets_answers() {
    let Some(pylsp) = pylsp() else { return };
    let s = setup(
        &pylsp,
        vec![
            Step::text("no server yet"),
            Step::tool_call(
                "lsp_hover",
                json!({"path": "app.py", "line": CALL.0, "character": CALL.1}),
            ),
            Step::tool_call(
                "lsp_definition",
                json!({"path": "app.py", "line": CALL.0, "character": CALL.1}),
            ),
            Step::tool_call("lsp_diagnostics", json!({"path": "broken.py"})),
            Step::tool_call(
                "lsp_hover",
                json!({"path": "../outside.py", "line": 0, "character": 0}),
            ),
            Step::text("done"),
        ],
    )
    .await;
    let h = |text: &'static str| {
        let engine = s.engine.clone();
        let thread = s.thread.id.clone();
        async move {
            let view = engine.threads().read(&thread).await.expect("read");
            let mut sub = engine
                .feeds()
                .subscribe(&thread, view.thread.last_seq + 1)
                .await
                .expect("subscribe");
            let turn = engine
                .turns()
                .send(&thread, text, gantry_core::IfBusy::Reject)
                .await
                .expect("send");
            tokio::time::timeout(HANG_GUARD, until_turn_ends(&mut sub, &turn))
                .await
                .expect("the turn ends")
        }
    };
    let seen = h("hello").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(
        !offered_tools(&s.llm, 0)
            .iter()
            .any(|t| t.starts_with("lsp_")),
        "no server, no LSP tools"
    );

    s.engine
        .lsp()
        .start_thread_server(&s.thread.id, "python")
        .await
        .expect("pylsp starts");
    let seen = h("what does greet do?").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let offered = offered_tools(&s.llm, 1);
    for tool in [
        "lsp_hover",
        "lsp_definition",
        "lsp_references",
        "lsp_symbols",
        "lsp_diagnostics",
    ] {
        assert!(offered.iter().any(|t| t == tool), "{tool}: {offered:?}");
    }
    let hover = last_tool_result(&s.llm, 2);
    assert!(hover.contains("friendly greeting"), "{hover}");
    let definition = last_tool_result(&s.llm, 3);
    assert!(definition.contains("app.py:3:4-3:9"), "{definition}");
    let diagnostics = last_tool_result(&s.llm, 4);
    assert!(
        diagnostics.contains("broken.py:1:11 error [pyflakes]")
            && diagnostics.contains("undefined name 'undefined_thing'"),
        "{diagnostics}"
    );
    let outside = last_tool_result(&s.llm, 5);
    assert!(outside.contains("outside the workspace"), "{outside}");
}

#[test]
fn lsp_tools_are_read_only_queries_that_rules_name_like_any_tool() {
    use gantry_core::policy::{
        SessionGrants, ToolRequest, Verdict, decide, is_known_safe, lane_of,
    };
    use gantry_types::{ApprovalPolicy, Lane, ThreadPolicy};
    let args = json!({"path": "app.py", "line": 0, "character": 0});
    let req = |tool| ToolRequest {
        tool,
        args: &args,
        workspace: Path::new("/ws"),
    };
    for tool in [
        "lsp_hover",
        "lsp_definition",
        "lsp_references",
        "lsp_symbols",
        "lsp_diagnostics",
    ] {
        assert_eq!(lane_of(tool), Lane::Query, "{tool}");
        assert!(is_known_safe(&req(tool)), "{tool}");
    }
    // `untrusted` runs them unasked, as it does read_file.
    let mut policy = ThreadPolicy {
        approval: ApprovalPolicy::Untrusted,
        ..Default::default()
    };
    assert_eq!(
        decide(&policy, &SessionGrants::default(), &req("lsp_hover")),
        Verdict::Allow
    );
    // A rule names them by tool name.
    policy.permissions.enabled = true;
    policy.permissions.deny = vec!["lsp_*".into()];
    assert!(matches!(
        decide(&policy, &SessionGrants::default(), &req("lsp_hover")),
        Verdict::Deny { .. }
    ));
}
