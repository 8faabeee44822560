//! MCP servers over the wire: register (persisted), connect, list, tools,
//! disconnect, against real MCP servers (`@modelcontextprotocol/server-everything`
//! on node, and the Python `mcp` fixture of gantry-tools over streamable
//! HTTP), and the errors. `.ci/run` installs both; under CI a missing one
//! fails the test, elsewhere it is skipped with a printed reason.

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{Server, guard};
use gantry_core::{IfBusy, MCP_SERVERS_SETTING, Notification};
use gantry_store::{SqliteStore, Store};
use gantry_testkit::Step;
use gantry_types::{EventPayload, ThreadId};
use proto_code_agent::pb;
use proto_code_agent::pb::mcp_transport::Transport;
use serde_json::{Value, json};
use tonic::Code;

/// Skips a test whose server is not installed, or fails it under CI.
fn missing(what: &str) {
    let why = format!("{what} is not installed: run `.ci/run`");
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("SKIPPED: {why}");
}

/// `dist/index.js` of server-everything.
fn everything() -> Option<PathBuf> {
    let path = std::env::var_os("GANTRY_TEST_MCP_EVERYTHING")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../.ci/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            )
        });
    if path.is_file() {
        return Some(path);
    }
    missing("@modelcontextprotocol/server-everything (npm)");
    None
}

/// The Python that has the `mcp` package.
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
    missing(&format!("Python's `mcp` package (for `{py}`)"));
    None
}

/// gantry-tools' MCP fixture server (add, echo, ...).
fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../gantry-tools/tests/fixtures/mcp/server.py")
        .display()
        .to_string()
}

fn stdio(
    name: &str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> pb::McpServerConfigProto {
    pb::McpServerConfigProto {
        name: name.into(),
        transport: Some(pb::McpTransport {
            transport: Some(Transport::Stdio(pb::McpStdioTransport {
                command: command.into(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
            })),
        }),
        enabled: true,
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        tool_timeout_secs: 0,
    }
}

fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> pb::McpServerConfigProto {
    pb::McpServerConfigProto {
        name: name.into(),
        transport: Some(pb::McpTransport {
            transport: Some(Transport::Http(pb::McpHttpTransport {
                url: url.into(),
                headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            })),
        }),
        enabled: true,
        env: Default::default(),
        tool_timeout_secs: 0,
    }
}

async fn register(
    s: &mut Server,
    config: pb::McpServerConfigProto,
) -> Result<pb::RegisterMcpServerResponse, tonic::Status> {
    s.client
        .register_mcp_server(pb::RegisterMcpServerRequest {
            config: Some(config),
        })
        .await
        .map(|r| r.into_inner())
}

async fn connect(
    s: &mut Server,
    name: &str,
) -> Result<pb::ConnectMcpServerResponse, tonic::Status> {
    guard(
        "ConnectMcpServer",
        s.client
            .connect_mcp_server(pb::ConnectMcpServerRequest { name: name.into() }),
    )
    .await
    .map(|r| r.into_inner())
}

async fn servers(s: &mut Server) -> Vec<pb::McpServerInfo> {
    s.client
        .list_mcp_servers(pb::ListMcpServersRequest {})
        .await
        .expect("list")
        .into_inner()
        .servers
}

async fn tools(
    s: &mut Server,
    server: Option<&str>,
) -> Result<Vec<pb::McpToolInfo>, tonic::Status> {
    guard(
        "GetMcpTools",
        s.client.get_mcp_tools(pb::GetMcpToolsRequest {
            server_name: server.map(str::to_owned),
        }),
    )
    .await
    .map(|r| r.into_inner().tools)
}

/// Runs one turn of `session` on the engine and waits until it ends.
async fn run_turn(s: &Server, session: &str, text: &str) {
    let id = ThreadId::from(session);
    let view = s.engine.threads().read(&id).await.expect("read");
    let mut sub = s
        .engine
        .feeds()
        .subscribe(&id, view.thread.last_seq + 1)
        .await
        .expect("subscribe");
    let turn = s
        .engine
        .turns()
        .send(&id, text, IfBusy::Reject)
        .await
        .expect("send");
    guard("the turn to end", async {
        while let Some(n) = sub.next().await {
            if let Notification::Event(e) = n
                && matches!(&e.payload, EventPayload::TurnCompleted { turn_id, .. } if *turn_id == turn)
            {
                return;
            }
        }
        panic!("the subscription ended before the turn did");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_stdio_server_connects_offers_its_tools_and_disconnects() {
    let Some(index_js) = everything() else { return };
    let index_js = index_js.display().to_string();
    let mut s = Server::start(vec![
        Step::tool_call("mcp__everything__get-env", json!({})),
        Step::text("done"),
    ])
    .await;
    let config = stdio(
        "everything",
        "node",
        &[&index_js],
        &[("GANTRY_MCP_TEST_VAR", "passed-through")],
    );
    let registered = register(&mut s, config).await.expect("register");
    assert!(registered.success, "{registered:?}");
    assert!(registered.message.contains("everything"), "{registered:?}");
    // Registered, not yet connected: listed without tools.
    let listed = servers(&mut s).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name, "everything");
    assert!(listed[0].enabled && !listed[0].connected, "{listed:?}");
    assert_eq!(
        (listed[0].tool_count, listed[0].error.as_deref()),
        (0, None)
    );
    assert!(tools(&mut s, None).await.expect("tools").is_empty());

    // The registration is persisted in the engine's store.
    let store = SqliteStore::open(&s.dir.path().join("gantry.db"))
        .await
        .expect("store");
    let stored = store
        .setting(MCP_SERVERS_SETTING)
        .await
        .expect("setting")
        .expect("stored MCP servers");
    let stored: Value = serde_json::from_str(&stored).expect("json");
    assert_eq!(stored[0]["name"], "everything", "{stored}");
    assert_eq!(stored[0]["transport"]["command"], "node", "{stored}");

    let connected = connect(&mut s, "everything").await.expect("connect");
    assert!(connected.success, "{connected:?}");
    assert!(
        connected
            .tool_names
            .iter()
            .any(|t| t == "mcp__everything__echo")
            && connected
                .tool_names
                .iter()
                .any(|t| t == "mcp__everything__get-env"),
        "{connected:?}"
    );
    let listed = servers(&mut s).await;
    assert!(listed[0].connected, "{listed:?}");
    assert_eq!(listed[0].tool_count as usize, connected.tool_names.len());

    let offered = tools(&mut s, Some("everything")).await.expect("tools");
    assert_eq!(offered.len(), connected.tool_names.len());
    let echo = offered
        .iter()
        .find(|t| t.tool_name == "echo")
        .unwrap_or_else(|| panic!("no echo in {offered:?}"));
    assert_eq!(echo.full_name, "mcp__everything__echo");
    assert_eq!(echo.server_name, "everything");
    assert!(!echo.description.is_empty(), "{echo:?}");
    let schema: Value = serde_json::from_str(&echo.input_schema).expect("schema is JSON");
    assert!(schema["properties"]["message"].is_object(), "{schema}");

    // A session's model is offered the tools and its call reaches the
    // server, which got the configured environment.
    let session = s.session().await;
    run_turn(&s, &session, "show the environment").await;
    let requests = s.llm.requests();
    let offered_to_model: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools offered")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered_to_model.contains(&"mcp__everything__get-env"),
        "{offered_to_model:?}"
    );
    let result = requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "tool"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(result.contains("passed-through"), "{result}");

    let disconnected = s
        .client
        .disconnect_mcp_server(pb::DisconnectMcpServerRequest {
            name: "everything".into(),
        })
        .await
        .expect("disconnect")
        .into_inner();
    assert!(disconnected.success);
    let listed = servers(&mut s).await;
    assert!(
        !listed[0].connected && listed[0].tool_count == 0,
        "{listed:?}"
    );
    assert!(
        tools(&mut s, Some("everything"))
            .await
            .expect("tools")
            .is_empty()
    );
}

/// Starts the Python fixture over streamable HTTP requiring `token` (and
/// the `X-Gantry-Test: yes` header); its URL once it accepts connections.
async fn start_http_fixture(py: &str, token: &str) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = tokio::process::Command::new(py)
        .args([fixture(), "http".into(), port.to_string(), token.into()])
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the HTTP fixture");
    guard("the HTTP fixture to listen", async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if let Some(status) = child.try_wait().expect("fixture status") {
                panic!("the HTTP fixture exited: {status}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_gets_the_registered_headers_and_a_failure_is_reported() {
    let Some(py) = python() else { return };
    let token = format!("tok-{}", std::process::id());
    let (_fixture, url) = start_http_fixture(&py, &token).await;
    let mut s = Server::start(vec![]).await;
    let bearer = format!("Bearer {token}");
    let config = http(
        "py-http",
        &url,
        &[("Authorization", &bearer), ("X-Gantry-Test", "yes")],
    );
    register(&mut s, config).await.expect("register");
    let connected = connect(&mut s, "py-http").await.expect("connect");
    assert!(
        connected
            .tool_names
            .iter()
            .any(|t| t == "mcp__py-http__add"),
        "{connected:?}"
    );
    let add = tools(&mut s, None)
        .await
        .expect("tools")
        .into_iter()
        .find(|t| t.full_name == "mcp__py-http__add")
        .expect("add");
    assert_eq!(add.description, "Adds two integers.");

    // Registered again without the header the server requires: replaced
    // (one server, disconnected), and connecting fails as unavailable,
    // the reason kept in the listing.
    let config = http("py-http", &url, &[("Authorization", &bearer)]);
    register(&mut s, config).await.expect("register again");
    let listed = servers(&mut s).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(!listed[0].connected, "{listed:?}");
    let err = connect(&mut s, "py-http").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("py-http"), "{err:?}");
    let listed = servers(&mut s).await;
    assert!(
        !listed[0].connected && listed[0].error.is_some(),
        "{listed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configs_unknown_disabled_and_unreachable_servers_are_told_apart() {
    let mut s = Server::start(vec![]).await;
    let invalid = |field: &'static str| {
        move |r: Result<pb::RegisterMcpServerResponse, tonic::Status>| {
            let err = r.expect_err(field);
            assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
            assert!(err.message().contains(field), "{field}: {err:?}");
        }
    };
    let err = s
        .client
        .register_mcp_server(pb::RegisterMcpServerRequest { config: None })
        .await;
    invalid("config")(err.map(|r| r.into_inner()));
    invalid("config.name")(register(&mut s, stdio(" ", "node", &[], &[])).await);
    let mut no_transport = stdio("x", "node", &[], &[]);
    no_transport.transport = None;
    invalid("config.transport")(register(&mut s, no_transport).await);
    invalid("config.transport.stdio.command")(register(&mut s, stdio("x", "", &[], &[])).await);
    invalid("config.env")(register(&mut s, stdio("x", "node", &[], &[("A=B", "1")])).await);
    invalid("config.transport.http.url")(
        register(&mut s, http("x", "ftp://127.0.0.1/mcp", &[])).await,
    );
    invalid("config.transport.http.headers")(
        register(
            &mut s,
            http("x", "http://127.0.0.1:9/mcp", &[("bad header", "1")]),
        )
        .await,
    );
    let mut http_env = http("x", "http://127.0.0.1:9/mcp", &[]);
    http_env.env.insert("TOKEN".into(), "t".into());
    invalid("config.env")(register(&mut s, http_env).await);
    assert!(servers(&mut s).await.is_empty(), "nothing was registered");

    let err = connect(&mut s, "").await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("name"), "{err:?}");
    let err = connect(&mut s, "nope").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = s
        .client
        .disconnect_mcp_server(pb::DisconnectMcpServerRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = tools(&mut s, Some("nope")).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    // Disabled: listed as such, and not connected.
    let mut disabled = stdio("off", "node", &[], &[]);
    disabled.enabled = false;
    register(&mut s, disabled).await.expect("register");
    let err = connect(&mut s, "off").await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("disabled"), "{err:?}");

    // A command that does not exist: unavailable, named, and listed.
    let missing = stdio("ghost", "/nonexistent/gantry-no-such-mcp-server", &[], &[]);
    register(&mut s, missing).await.expect("register");
    let err = connect(&mut s, "ghost").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(
        err.message().contains("gantry-no-such-mcp-server"),
        "{err:?}"
    );
    let listed = servers(&mut s).await;
    let names: Vec<(&str, bool, bool)> = listed
        .iter()
        .map(|s| (s.name.as_str(), s.enabled, s.connected))
        .collect();
    assert_eq!(names, [("ghost", true, false), ("off", false, false)]);
    let ghost = &listed[0];
    assert!(
        ghost
            .error
            .as_deref()
            .is_some_and(|e| e.contains("gantry-no-such-mcp-server")),
        "{ghost:?}"
    );
}
