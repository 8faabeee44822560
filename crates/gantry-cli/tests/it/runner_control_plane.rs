//! The real binaries together: `gantry control-plane serve`, `gantry
//! runner` dialing it, the mock model over HTTP, and a user on the HTTP API
//! through curl. A turn with a command runs end to end; a steer is refused
//! and accepted; the control plane is killed mid-turn and restarted, and
//! the runner reconnects and the turn's remaining updates arrive.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

/// Longest wait for anything the processes should do.
const GUARD: Duration = Duration::from_secs(30);

/// A child process killed when dropped.
pub(crate) struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An environment with a bare home: no user config or profile leaks in.
pub(crate) fn gantry(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gantry"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GANTRY_LOG", "warn")
        .stdin(Stdio::null());
    cmd
}

/// `gantry runner` dialing `control_planes` (comma-separated URLs) with its
/// token file, workspaces root, data dir and config; stdout discarded.
pub(crate) fn runner_command(
    home: &Path,
    control_planes: &str,
    token_file: &Path,
    workspaces: &Path,
    data: &Path,
    config: &Path,
) -> Command {
    let mut cmd = gantry(home);
    cmd.arg("runner")
        .args(["--control-plane", control_planes])
        .arg("--token-file")
        .arg(token_file)
        .arg("--workspaces")
        .arg(workspaces)
        .arg("--data-dir")
        .arg(data)
        .arg("--config")
        .arg(config)
        .stdout(Stdio::null());
    cmd
}

/// Lines of a child's stream, read on a thread.
pub(crate) fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The first line containing `needle`, within [`GUARD`].
pub(crate) fn wait_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + GUARD;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line with {needle:?}; got {seen:?}");
}

/// A control plane process and the addresses it printed.
pub(crate) struct ControlPlane {
    _proc: Proc,
    pub grpc: String,
    pub http: String,
    /// The rest of its stderr, read so that the pipe stays open.
    _stderr: mpsc::Receiver<String>,
}

pub(crate) fn start_control_plane(
    home: &Path,
    data: &Path,
    grpc: &str,
    http: &str,
) -> ControlPlane {
    start_control_plane_with(home, data, grpc, http, &[])
}

/// [`start_control_plane`] with `extra` arguments to `serve`.
pub(crate) fn start_control_plane_with(
    home: &Path,
    data: &Path,
    grpc: &str,
    http: &str,
    extra: &[&str],
) -> ControlPlane {
    let mut child = gantry(home)
        .args([
            "control-plane",
            "serve",
            "--grpc-listen",
            grpc,
            "--http-listen",
            http,
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = lines(child.stderr.take().unwrap());
    let line = wait_line(&stderr, "gantry: control plane gRPC on ");
    // "gantry: control plane gRPC on A, HTTP on B"
    let rest = line.split("gRPC on ").nth(1).unwrap();
    let (grpc, http) = rest.split_once(", HTTP on ").unwrap();
    ControlPlane {
        _proc: Proc(child),
        grpc: grpc.trim().to_owned(),
        http: http.trim().to_owned(),
        _stderr: stderr,
    }
}

/// `curl` a JSON request: the status and the JSON answer.
pub(crate) fn curl(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    curl_as(None, method, url, body)
}

/// [`curl`] with `authorization: Bearer <token>` when given.
pub(crate) fn curl_as(
    token: Option<&str>,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-m", "30", "-w", "\n%{http_code}", "-X", method, url]);
    if let Some(token) = token {
        cmd.args(["-H", &format!("authorization: Bearer {token}")]);
    }
    if let Some(body) = body {
        cmd.args([
            "-H",
            "content-type: application/json",
            "-d",
            &body.to_string(),
        ]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (json, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    let code = code.trim().parse().unwrap_or(0);
    (code, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// One server-sent event.
#[derive(Debug)]
pub(crate) struct Sse {
    pub id: String,
    pub data: Value,
}

/// Follows a thread's events with `curl -N`, from after `last_event_id`.
pub(crate) struct Follow {
    _proc: Proc,
    lines: mpsc::Receiver<String>,
}

impl Follow {
    pub(crate) fn start(http: &str, thread: &str, last_event_id: Option<&str>) -> Follow {
        Self::start_as(None, http, thread, last_event_id)
    }

    /// [`Follow::start`] with `authorization: Bearer <token>` when given.
    pub(crate) fn start_as(
        token: Option<&str>,
        http: &str,
        thread: &str,
        last_event_id: Option<&str>,
    ) -> Follow {
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "-N"]);
        if let Some(token) = token {
            cmd.args(["-H", &format!("authorization: Bearer {token}")]);
        }
        if let Some(id) = last_event_id {
            cmd.args(["-H", &format!("Last-Event-ID: {id}")]);
        }
        let mut child = cmd
            .arg(format!("http://{http}/v1/threads/{thread}/events"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = lines(child.stdout.take().unwrap());
        Follow {
            _proc: Proc(child),
            lines,
        }
    }

    /// The next event (keep-alive comments are skipped).
    pub(crate) fn next(&self) -> Sse {
        let (mut id, mut data) = (String::new(), String::new());
        loop {
            let line = self
                .lines
                .recv_timeout(GUARD)
                .expect("an event within the guard");
            if line.is_empty() {
                if !data.is_empty() {
                    return Sse {
                        id,
                        data: serde_json::from_str(&data).unwrap(),
                    };
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim());
            }
        }
    }

    /// Events until one for which `done` holds (included).
    pub(crate) fn until(&self, done: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let event = self.next();
            let stop = done(&event);
            seen.push(event);
            if stop {
                return seen;
            }
        }
    }
}

pub(crate) fn is_item(event: &Sse, kind: &str, status: &str) -> bool {
    event.data["kind"] == "item"
        && event.data["data"]["type"] == kind
        && event.data["data"]["status"] == status
}

pub(crate) fn is_turn(event: &Sse, status: &str) -> bool {
    event.data["kind"] == "turn" && event.data["data"]["status"] == status
}

/// Waits, bounded, until `ready` holds; for states nothing announces.
pub(crate) fn eventually(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + GUARD;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_runner_serves_the_control_plane_through_a_steer_and_a_control_plane_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cp_data = tmp.path().join("cp");
    let runner_data = tmp.path().join("runner");
    let workspaces: PathBuf = tmp.path().join("workspaces");
    std::fs::create_dir_all(&home).unwrap();

    // The mock model serves from a runtime of its own; the test itself
    // drives processes.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _enter = runtime.enter();
    // The command waits for a file the test creates: the turn is mid-command
    // for as long as the test needs.
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": "while [ ! -e release ]; do sleep 0.05; done; echo built"}),
        ),
        Step::text("Built it, and tested it."),
    ]))
    .unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"mock/gpt-4.1\"\n[providers.mock]\nkind = \"openai-chat\"\nbase_url = \"{}\"\napi_key = \"sk-test\"\nmodels = [\"gpt-4.1\"]\n",
            llm.base_url()
        ),
    )
    .unwrap();

    let cp = start_control_plane(&home, &cp_data, "127.0.0.1:0", "127.0.0.1:0");
    let out = gantry(&home)
        .args(["control-plane", "add-runner", "builder-1", "--data-dir"])
        .arg(&cp_data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token_file = tmp.path().join("builder-1.token");
    std::fs::write(&token_file, &out.stdout).unwrap();

    let mut runner = runner_command(
        &home,
        &format!("http://{}", cp.grpc),
        &token_file,
        &workspaces,
        &runner_data,
        &config,
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let runner_log = lines(runner.stderr.take().unwrap());
    let _runner = Proc(runner);
    wait_line(&runner_log, "gantry: runner dialing");

    let http = cp.http.clone();
    eventually("the runner connects", || {
        let (_, runners) = curl("GET", &format!("http://{http}/v1/runners"), None);
        runners[0]["connected"] == true
    });
    let (_, runners) = curl("GET", &format!("http://{http}/v1/runners"), None);
    assert_eq!(runners[0]["name"], "builder-1");
    let models: Vec<&str> = runners[0]["sdks"][0]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(models.contains(&"mock/gpt-4.1"), "{models:?}");

    let (status, agent) = curl(
        "POST",
        &format!("http://{http}/v1/agents"),
        Some(json!({"sdk": "gantry"})),
    );
    assert_eq!(status, 201, "{agent}");
    let agent = agent["id"].as_str().unwrap().to_owned();
    let (status, thread) = curl(
        "POST",
        &format!("http://{http}/v1/agents/{agent}/threads"),
        Some(json!({"model": "mock/gpt-4.1"})),
    );
    assert_eq!(status, 201, "{thread}");
    let thread = thread["id"].as_str().unwrap().to_owned();

    let follow = Follow::start(&http, &thread, None);
    let (status, sent) = curl(
        "POST",
        &format!("http://{http}/v1/threads/{thread}/messages"),
        Some(json!({"text": "build the project"})),
    );
    assert_eq!(status, 202, "{sent}");
    let turn = sent["turn_id"].as_str().unwrap().to_owned();
    let started = follow.until(|e| is_item(e, "command_execution", "running"));
    assert!(started.iter().any(|e| is_turn(e, "running")));
    assert!(
        started
            .iter()
            .any(|e| is_item(e, "user_message", "completed")
                && e.data["data"]["text"] == "build the project")
    );

    // A second message while the command runs: refused unless steering.
    let (status, refused) = curl(
        "POST",
        &format!("http://{http}/v1/threads/{thread}/messages"),
        Some(json!({"text": "and test it", "allow_steer": false})),
    );
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("allow_steer"),
        "{refused}"
    );
    let (status, steered) = curl(
        "POST",
        &format!("http://{http}/v1/threads/{thread}/messages"),
        Some(json!({"text": "and test it", "allow_steer": true})),
    );
    assert_eq!(status, 202, "{steered}");
    assert_eq!(steered["steered"], true);
    assert_eq!(steered["turn_id"], turn.as_str());

    // The control plane dies mid-turn; the turn finishes without it.
    let last_seen = started.last().unwrap().id.clone();
    drop(follow);
    let (grpc_addr, http_addr) = (cp.grpc.clone(), cp.http.clone());
    drop(cp);
    std::fs::write(workspaces.join(&thread).join("release"), "").unwrap();
    eventually("the turn finishes on the runner", || {
        llm.requests().len() == 2
    });

    // Back on the same addresses with the same data: the runner reconnects
    // by itself and the rest of the turn arrives.
    let cp = start_control_plane(&home, &cp_data, &grpc_addr, &http_addr);
    let follow = Follow::start(&cp.http, &thread, Some(&last_seen));
    let rest = follow.until(|e| is_turn(e, "completed"));
    let seqs: Vec<u64> = rest.iter().map(|e| e.id.parse().unwrap()).collect();
    let first: u64 = last_seen.parse::<u64>().unwrap() + 1;
    assert_eq!(
        seqs,
        (first..first + seqs.len() as u64).collect::<Vec<_>>(),
        "dense, after Last-Event-ID"
    );
    let command = rest
        .iter()
        .find(|e| is_item(e, "command_execution", "completed"))
        .expect("the command's completion arrived");
    assert!(
        command.data["data"].to_string().contains("built"),
        "{}",
        command.data
    );
    assert!(rest.iter().any(
        |e| is_item(e, "user_message", "completed") && e.data["data"]["text"] == "and test it"
    ));
    let answer = rest
        .iter()
        .find(|e| is_item(e, "agent_message", "completed"))
        .expect("the answer arrived");
    assert_eq!(answer.data["data"]["text"], "Built it, and tested it.");

    let (_, view) = curl(
        "GET",
        &format!("http://{}/v1/threads/{thread}", cp.http),
        None,
    );
    assert_eq!(view["turns"][0]["status"], "completed", "{view}");
    assert_eq!(view["turns"].as_array().map(Vec::len), Some(1));
    // The steer reached the model before its second request.
    let second = &llm.requests()[1].body["messages"];
    assert!(second.to_string().contains("and test it"), "{second}");
}

/// `gantry control-plane SUBCOMMAND ARGS... --data-dir DATA`: its output.
pub(crate) fn control_plane_cli(home: &Path, data: &Path, args: &[&str]) -> std::process::Output {
    gantry(home)
        .arg("control-plane")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap()
}

/// `curl` a GET with `authorization: Bearer <token>` when given: the status.
pub(crate) fn curl_status(url: &str, token: Option<&str>) -> u16 {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}"]);
    if let Some(token) = token {
        cmd.args(["-H", &format!("authorization: Bearer {token}")]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn api_tokens_are_created_listed_and_revoked_from_the_cli_while_the_server_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let data = tmp.path().join("cp");
    std::fs::create_dir_all(&home).unwrap();
    let cp = start_control_plane(&home, &data, "127.0.0.1:0", "127.0.0.1:0");
    let runners = format!("http://{}/v1/runners", cp.http);

    // Loopback, no token yet: open; a text/plain POST is refused all the same.
    assert_eq!(curl_status(&runners, None), 200);
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-H", "content-type: text/plain", "-d", "{}"])
        .arg(format!("http://{}/v1/agents", cp.http))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "415");

    let mut tokens = Vec::new();
    for name in ["alice", "ci"] {
        let out = control_plane_cli(&home, &data, &["create-token", "--name", name]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert_eq!(token.len(), 64, "the token alone on stdout");
        tokens.push(token);
    }
    let out = control_plane_cli(&home, &data, &["create-token", "--name", "ci"]);
    assert!(!out.status.success(), "a name is taken once");

    // Now every call but the document needs one.
    assert_eq!(curl_status(&runners, None), 401);
    assert_eq!(curl_status(&runners, Some(&tokens[0])), 200);
    assert_eq!(curl_status(&runners, Some("not-a-token")), 401);
    assert_eq!(
        curl_status(&format!("http://{}/openapi.json", cp.http), None),
        200
    );

    // A read-only token reads, and is refused anything else (403).
    let out = control_plane_cli(
        &home,
        &data,
        &["create-token", "--name", "viewer", "--read-only"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let viewer = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert_eq!(curl_status(&runners, Some(&viewer)), 200);
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(["-H", &format!("authorization: Bearer {viewer}")])
        .args(["-H", "content-type: application/json", "-d", "{}"])
        .arg(format!("http://{}/v1/agents", cp.http))
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.ends_with("\n403"), "{answer}");
    assert!(answer.contains(r#""code":"forbidden""#), "{answer}");
    assert!(answer.contains("read-only"), "{answer}");

    let out = control_plane_cli(&home, &data, &["list-tokens"]);
    let listed = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<(&str, &str)> = listed
        .lines()
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            (fields[0], fields[2])
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("alice", "read-write"),
            ("ci", "read-write"),
            ("viewer", "read-only")
        ]
    );
    assert!(!listed.contains(&tokens[0]), "tokens are not kept");

    let out = control_plane_cli(&home, &data, &["revoke-token", "alice"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(curl_status(&runners, Some(&tokens[0])), 401);
    assert_eq!(curl_status(&runners, Some(&tokens[1])), 200);
    let out = control_plane_cli(&home, &data, &["revoke-token", "alice"]);
    assert!(!out.status.success(), "nothing left to revoke");
}
