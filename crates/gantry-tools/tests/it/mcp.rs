//! MCP client tests against real third-party servers:
//! `@modelcontextprotocol/server-everything` (npm, stdio) and a fixture
//! server built on Python's `mcp` SDK (`fixtures/mcp/server.py`, stdio and
//! streamable HTTP). `.ci/run` installs both and exports
//! `GANTRY_TEST_MCP_EVERYTHING`; with `CI` set a missing install fails the
//! test, otherwise the test is skipped with a printed reason.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_tools::mcp::{
    McpError, McpManager, McpServerConfig, McpStartupStatus, McpStartupUpdate, McpTransport,
};
use gantry_tools::{ToolRegistry, ToolStatus};
use gantry_types::ItemKind;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Fails under CI, skips (with the reason printed) elsewhere.
fn missing(what: &str) {
    let msg = format!(
        "{what} is not installed: run `.ci/run` (it installs the MCP test servers), \
         or install it by hand as .ci/run does"
    );
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `dist/index.js` of server-everything, from `GANTRY_TEST_MCP_EVERYTHING`
/// or where `.ci/run` installs it.
fn everything() -> Option<PathBuf> {
    let path = std::env::var_os("GANTRY_TEST_MCP_EVERYTHING")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            repo_root()
                .join(".ci/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        });
    if path.is_file() {
        Some(path)
    } else {
        missing(&format!(
            "@modelcontextprotocol/server-everything (npm; expected at {})",
            path.display()
        ));
        None
    }
}

/// The Python interpreter that has the `mcp` package.
fn python() -> Option<String> {
    let py = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import mcp.server.mcpserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(py)
    } else {
        missing(&format!("Python's `mcp` package (pip, for `{py}`)"));
        None
    }
}

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp/server.py")
        .display()
        .to_string()
}

fn everything_config(name: &str, index_js: &Path) -> McpServerConfig {
    McpServerConfig::new(
        name,
        McpTransport::Stdio {
            command: "node".into(),
            args: vec![index_js.display().to_string()],
            env: [(
                "GANTRY_MCP_TEST_VAR".to_string(),
                "passed-through".to_string(),
            )]
            .into(),
            cwd: Some(std::env::temp_dir()),
        },
    )
}

fn py_stdio_config(name: &str, py: &str) -> McpServerConfig {
    McpServerConfig::new(
        name,
        McpTransport::Stdio {
            command: py.into(),
            args: vec![fixture(), "stdio".into()],
            env: Default::default(),
            cwd: None,
        },
    )
}

/// `config` with `tag` as an extra argument (the fixture ignores it), so a
/// test can find its server among the machine's processes.
fn tagged(mut config: McpServerConfig, tag: &std::path::Path) -> McpServerConfig {
    if let McpTransport::Stdio { args, .. } = &mut config.transport {
        args.push(tag.display().to_string());
    }
    config
}

/// The pid, as the host sees it, of the one server started [`tagged`] with
/// `tag`. What the server could say of itself is no use: it runs in a PID
/// namespace of its own.
fn server_pid(tag: &std::path::Path) -> i32 {
    let pids = gantry_testkit::process::pids_with_arg(&tag.display().to_string());
    assert_eq!(
        pids.len(),
        1,
        "one server process, tagged {tag:?}: {pids:?}"
    );
    i32::try_from(pids[0]).unwrap()
}

fn sleeper(name: &str, startup_timeout_ms: u64) -> McpServerConfig {
    // A process that never speaks MCP: startup can only time out.
    McpServerConfig {
        startup_timeout_ms,
        ..McpServerConfig::new(
            name,
            McpTransport::Stdio {
                command: "sleep".into(),
                args: vec!["600".into()],
                env: Default::default(),
                cwd: None,
            },
        )
    }
}

/// A progress callback that records updates.
fn recorder() -> (
    Arc<Mutex<Vec<McpStartupUpdate>>>,
    impl Fn(McpStartupUpdate) + Clone,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |u| s.lock().unwrap().push(u))
}

fn statuses_of(updates: &[McpStartupUpdate], server: &str) -> Vec<McpStartupStatus> {
    updates
        .iter()
        .filter(|u| u.server_name == server)
        .map(|u| u.status.clone())
        .collect()
}

fn status_of(m: &McpManager, server: &str) -> gantry_tools::mcp::McpServerStatus {
    m.status().into_iter().find(|s| s.name == server).unwrap()
}

async fn call(m: &McpManager, server: &str, tool: &str, args: Value) -> Result<String, McpError> {
    m.call(server, tool, args, None, &CancellationToken::new())
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_everything_lists_and_calls_tools() {
    let Some(index_js) = everything() else { return };
    let m = McpManager::new();
    m.add(everything_config("everything", &index_js)).unwrap();
    let (seen, progress) = recorder();
    let summary = m.start_all(progress).await;
    assert_eq!(summary.ready, vec!["everything".to_string()], "{summary:?}");
    assert_eq!(
        statuses_of(&seen.lock().unwrap(), "everything"),
        vec![McpStartupStatus::Starting, McpStartupStatus::Ready]
    );

    let tools = m.tools().await;
    let echo = tools
        .iter()
        .find(|t| t.full_name == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("no echo in {tools:?}"));
    assert_eq!(echo.server, "everything");
    assert_eq!(echo.tool, "echo");
    assert_eq!(echo.description, "Echoes back the input string");
    assert!(echo.input_schema["properties"]["message"].is_object());
    assert!(
        tools
            .iter()
            .any(|t| t.full_name == "mcp__everything__get-sum")
    );

    let st = status_of(&m, "everything");
    assert!(st.connected && st.enabled && st.last_error.is_none());
    assert_eq!(st.tool_count, tools.len());

    assert_eq!(
        call(&m, "everything", "echo", json!({"message": "hi there"}))
            .await
            .unwrap(),
        "Echo: hi there"
    );
    assert_eq!(
        call(&m, "everything", "get-sum", json!({"a": 2, "b": 40}))
            .await
            .unwrap(),
        "The sum of 2 and 40 is 42."
    );
    // The config's env reaches the server process.
    let env = call(&m, "everything", "get-env", json!({})).await.unwrap();
    assert!(env.contains("passed-through"), "{env}");

    // A tool the server does not have: rejected, naming the server; the
    // connection stays up.
    let err = call(&m, "everything", "no-such-tool", json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`everything`"), "{err}");
    assert!(status_of(&m, "everything").connected);

    m.disconnect("everything").unwrap();
    let st = status_of(&m, "everything");
    assert!(!st.connected);
    assert_eq!(st.tool_count, 0);
    assert!(
        m.tools().await.is_empty(),
        "disconnected servers are not reconnected by tools()"
    );
    m.connect("everything").await.unwrap();
    assert!(status_of(&m, "everything").connected);
}

/// A free loopback port (the race with another process taking it first is
/// accepted for a test).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the Python fixture over streamable HTTP requiring `token`, and
/// waits until it accepts connections.
async fn start_http_fixture(py: &str, token: &str) -> (tokio::process::Child, String) {
    let port = free_port();
    let mut child = tokio::process::Command::new(py)
        .args([fixture(), "http".into(), port.to_string(), token.into()])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("HTTP fixture exited early: {status}");
        }
        assert!(Instant::now() < deadline, "HTTP fixture did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_python_server_lists_and_calls_tools() {
    let Some(py) = python() else { return };
    let token = format!("tok-{}", std::process::id());
    let (_child, url) = start_http_fixture(&py, &token).await;
    // SAFETY: set before any thread of this test reads the environment; the
    // name is unique to this test.
    unsafe { std::env::set_var("GANTRY_TEST_MCP_HTTP_TOKEN", &token) };

    let http = |headers: Vec<(&str, &str)>, token_env: &str| {
        McpServerConfig::new(
            "py-http",
            McpTransport::Http {
                url: url.clone(),
                headers: headers
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                bearer_token_env: Some(token_env.into()),
            },
        )
    };

    let m = McpManager::new();
    m.add(http(
        vec![("X-Gantry-Test", "yes")],
        "GANTRY_TEST_MCP_HTTP_TOKEN",
    ))
    .unwrap();
    let summary = m.start_all(|_| {}).await;
    assert_eq!(summary.ready, vec!["py-http".to_string()], "{summary:?}");
    let tools = m.tools().await;
    let add = tools
        .iter()
        .find(|t| t.full_name == "mcp__py-http__add")
        .unwrap_or_else(|| panic!("no add in {tools:?}"));
    assert_eq!(add.description, "Adds two integers.");
    assert!(add.input_schema["properties"]["b"].is_object());
    assert_eq!(
        call(&m, "py-http", "add", json!({"a": 2, "b": 3}))
            .await
            .unwrap(),
        "5"
    );
    assert_eq!(
        call(&m, "py-http", "echo", json!({"message": "over http"}))
            .await
            .unwrap(),
        "echo: over http"
    );

    // Without the custom header the fixture answers 403: startup fails.
    m.add(http(vec![], "GANTRY_TEST_MCP_HTTP_TOKEN")).unwrap();
    let summary = m.start_all(|_| {}).await;
    assert_eq!(summary.failed.len(), 1, "{summary:?}");
    // A bearer-token variable that is not set is reported as such.
    m.add(http(
        vec![("X-Gantry-Test", "yes")],
        "GANTRY_TEST_MCP_UNSET_TOKEN",
    ))
    .unwrap();
    let summary = m.start_all(|_| {}).await;
    assert!(
        summary.failed[0]
            .error
            .contains("GANTRY_TEST_MCP_UNSET_TOKEN"),
        "{summary:?}"
    );
    assert!(!status_of(&m, "py-http").connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_startup_reports_each_server_and_a_summary() {
    let Some(py) = python() else { return };
    let Some(index_js) = everything() else { return };
    let m = McpManager::with_configs([
        everything_config("everything", &index_js),
        py_stdio_config("py", &py),
        McpServerConfig::new(
            "missing",
            McpTransport::Stdio {
                command: "gantry-no-such-mcp-server".into(),
                args: vec![],
                env: Default::default(),
                cwd: None,
            },
        ),
        McpServerConfig {
            enabled: false,
            ..py_stdio_config("off", &py)
        },
    ])
    .unwrap();
    let (seen, progress) = recorder();
    let summary = m.start_all(progress).await;

    assert_eq!(
        summary.ready,
        vec!["everything".to_string(), "py".to_string()]
    );
    assert_eq!(summary.failed.len(), 1, "{summary:?}");
    assert_eq!(summary.failed[0].server_name, "missing");
    assert!(
        summary.failed[0]
            .error
            .contains("gantry-no-such-mcp-server"),
        "{summary:?}"
    );
    assert!(summary.cancelled.is_empty());

    let seen = seen.lock().unwrap().clone();
    // Every server is announced before any finishes: they start together.
    assert!(
        seen[..3]
            .iter()
            .all(|u| u.status == McpStartupStatus::Starting),
        "{seen:?}"
    );
    assert!(statuses_of(&seen, "off").is_empty());
    assert!(matches!(
        statuses_of(&seen, "missing").as_slice(),
        [McpStartupStatus::Starting, McpStartupStatus::Failed { error }] if error.contains("failed to start")
    ));
    assert_eq!(statuses_of(&seen, "py")[1], McpStartupStatus::Ready);

    let status = m.status();
    let names: Vec<_> = status
        .iter()
        .map(|s| (s.name.as_str(), s.connected))
        .collect();
    assert_eq!(
        names,
        vec![
            ("everything", true),
            ("missing", false),
            ("off", false),
            ("py", true)
        ]
    );
    assert!(status[1].last_error.is_some());
    assert!(!status[2].enabled);
    assert!(matches!(
        call(&m, "off", "add", json!({})).await,
        Err(McpError::Disabled(_))
    ));
    assert!(matches!(
        call(&m, "nope", "add", json!({})).await,
        Err(McpError::UnknownServer(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_timeout_fails_and_cancel_reports_cancelled() {
    let m = McpManager::new();
    m.add(sleeper("slow", 300)).unwrap();
    let (seen, progress) = recorder();
    let started = Instant::now();
    let summary = m.start_all(progress).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(summary.failed.len(), 1, "{summary:?}");
    assert_eq!(summary.failed[0].error, "startup timed out after 300 ms");
    assert_eq!(
        statuses_of(&seen.lock().unwrap(), "slow")[1],
        McpStartupStatus::Failed {
            error: "startup timed out after 300 ms".into()
        }
    );
    assert_eq!(
        status_of(&m, "slow").last_error.as_deref(),
        Some("startup timed out after 300 ms")
    );

    // Cancelled while still starting (its own timeout is far away).
    m.add(sleeper("slow", 600_000)).unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let summary = m
        .start_all_cancellable(
            move |u| {
                if u.status == McpStartupStatus::Starting {
                    c.cancel();
                }
            },
            &cancel,
        )
        .await;
    assert_eq!(summary.cancelled, vec!["slow".to_string()], "{summary:?}");
    assert!(summary.ready.is_empty() && summary.failed.is_empty());
    assert!(!status_of(&m, "slow").connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_call_fails_cleanly_and_reconnects() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let m = McpManager::new();
    m.add(tagged(py_stdio_config("py", &py), &marker)).unwrap();
    m.connect("py").await.unwrap();

    let call_task = {
        let m = m.clone();
        let marker = marker.display().to_string();
        tokio::spawn(async move { call(&m, "py", "block", json!({"marker": marker})).await })
    };
    // The tool writes its marker once it is running.
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        if marker.exists() {
            break server_pid(&marker);
        }
        assert!(Instant::now() < deadline, "the block tool never started");
        assert!(
            !call_task.is_finished(),
            "call ended early: {:?}",
            call_task.await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();

    let err = tokio::time::timeout(Duration::from_secs(30), call_task)
        .await
        .expect("the call did not end after the server died")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, McpError::ServerGone { .. }), "{err:?}");
    assert!(err.to_string().contains("MCP server `py`"), "{err}");

    let st = status_of(&m, "py");
    assert!(!st.connected, "{st:?}");
    assert!(st.last_error.is_some(), "{st:?}");

    // Next use starts a new server process.
    assert_eq!(
        call(&m, "py", "add", json!({"a": 1, "b": 1}))
            .await
            .unwrap(),
        "2"
    );
    let st = status_of(&m, "py");
    assert!(st.connected && st.last_error.is_none(), "{st:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_reconnects_a_server_whose_process_died() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let m = McpManager::new();
    m.add(tagged(py_stdio_config("py", &py), &marker)).unwrap();
    m.connect("py").await.unwrap();
    // Run the block tool, cut short by a timeout, so the server is busy.
    let err = m
        .call(
            "py",
            "block",
            json!({"marker": marker.display().to_string()}),
            Some(Duration::from_millis(1500)),
            &CancellationToken::new(),
        )
        .await;
    assert!(marker.exists(), "block did not run; call: {err:?}");
    let pid = server_pid(&marker);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // Wait until the manager notices the exit (stdout closes).
    let deadline = Instant::now() + Duration::from_secs(30);
    while status_of(&m, "py").connected {
        assert!(Instant::now() < deadline, "death not noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(status_of(&m, "py").last_error.is_some());
    let tools = m.tools().await;
    assert!(
        tools.iter().any(|t| t.full_name == "mcp__py__add"),
        "{tools:?}"
    );
    assert!(status_of(&m, "py").connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_timeout_and_cancel_leave_the_server_usable() {
    let Some(py) = python() else { return };
    let m = McpManager::new();
    m.add(McpServerConfig {
        call_timeout_ms: 400,
        ..py_stdio_config("py", &py)
    })
    .unwrap();
    m.connect("py").await.unwrap();

    // The config's call timeout applies when the caller gives none.
    let err = call(&m, "py", "sleep", json!({"seconds": 60}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        McpError::Timeout {
            server: "py".into(),
            tool: "sleep".into(),
            timeout_ms: 400
        }
    );
    // An explicit timeout wins.
    assert_eq!(
        m.call(
            "py",
            "sleep",
            json!({"seconds": 0.5}),
            Some(Duration::from_secs(30)),
            &CancellationToken::new()
        )
        .await
        .unwrap(),
        "slept 0.5"
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(matches!(
        m.call("py", "sleep", json!({"seconds": 60}), None, &cancel)
            .await,
        Err(McpError::Cancelled { .. })
    ));
    assert!(status_of(&m, "py").connected);
    assert_eq!(
        call(&m, "py", "add", json!({"a": 20, "b": 22}))
            .await
            .unwrap(),
        "42"
    );
    assert!(matches!(
        call(&m, "py", "add", json!([1, 2])).await,
        Err(McpError::InvalidArguments { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tool_runs_through_the_tool_port() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = McpManager::new();
    m.add(py_stdio_config("py", &py)).unwrap();
    m.start_all(|_| {}).await;

    let mut registry = ToolRegistry::builtin();
    for t in m.tools_as_registry_entries().await {
        registry.register(t);
    }
    let tool = registry.get("mcp__py__add").unwrap().clone();
    let spec = tool.spec();
    assert_eq!(spec.name, "mcp__py__add");
    assert_eq!(spec.description, "Adds two integers.");
    assert_eq!(spec.parameters["type"], "object");
    assert!(spec.parameters["properties"]["a"].is_object());

    let args = json!({"a": 5, "b": 6});
    let ctx = common::ctx(dir.path());
    assert_eq!(
        tool.start_item(&args, &ctx),
        ItemKind::ToolCall {
            name: "mcp__py__add".into(),
            arguments: args.clone(),
            result: None,
            error: None
        }
    );
    let out = tool.run(args.clone(), ctx).await;
    assert_eq!(out.status, ToolStatus::Ok);
    assert_eq!(out.model_output, "11");
    assert_eq!(
        out.item,
        ItemKind::ToolCall {
            name: "mcp__py__add".into(),
            arguments: args,
            result: Some("11".into()),
            error: None
        }
    );

    // A tool error comes back as a failed ToolCall item, not a panic.
    let out = tool.run(json!({"a": "x"}), common::ctx(dir.path())).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        matches!(&out.item, ItemKind::ToolCall { error: Some(e), .. } if e.contains("`py`")),
        "{out:?}"
    );

    // ctx.cancel interrupts a running call.
    let sleep = registry.get("mcp__py__sleep").unwrap().clone();
    let ctx = common::ctx(dir.path());
    let cancel = ctx.cancel.clone();
    let run = tokio::spawn(async move { sleep.run(json!({"seconds": 60}), ctx).await });
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status, ToolStatus::Interrupted);
}

#[test]
fn config_serde_round_trips_with_defaults() {
    let cfg: McpServerConfig = serde_json::from_value(json!({
        "name": "docs",
        "transport": {"type": "http", "url": "http://localhost:1/mcp", "bearer_token_env": "T"}
    }))
    .unwrap();
    assert!(cfg.enabled);
    assert_eq!(
        cfg.startup_timeout_ms,
        gantry_tools::mcp::DEFAULT_STARTUP_TIMEOUT_MS
    );
    assert_eq!(
        cfg.call_timeout_ms,
        gantry_tools::mcp::DEFAULT_CALL_TIMEOUT_MS
    );
    let back: McpServerConfig =
        serde_json::from_value(serde_json::to_value(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
    let m = McpManager::new();
    assert!(
        m.add(McpServerConfig {
            name: " ".into(),
            ..cfg.clone()
        })
        .is_err()
    );
    m.add(cfg.clone()).unwrap();
    assert_eq!(m.list(), vec![cfg]);
    assert!(m.remove("docs"));
    assert!(!m.remove("docs"));
}
