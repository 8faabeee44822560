//! `gantry serve --http-addr`: the HTTP API of a real server. A client
//! following a thread over SSE through a `kill -9` mid-answer resumes on
//! the restarted server with `Last-Event-ID`: nothing missed, nothing twice.
//! A thread of the A3S gRPC service is one of the HTTP API: followed live
//! and steered over HTTP, its approval answered in the dashboard (headless
//! chromium) while the gRPC client waits. A thread's checkpoints are listed,
//! rewound to and forked from with curl.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use futures_util::StreamExt;
use gantry_testkit::{MockLlm, Script, Step, UsageSpec};
use serde_json::{Value, json};

use crate::common::Scratch;

/// A running `gantry serve` and the address of its HTTP API.
pub(super) struct Served {
    pub(super) child: Child,
    pub(super) http: String,
    pub(super) grpc: String,
    _lines: Receiver<String>,
}

fn serve(s: &Scratch) -> Served {
    serve_with(s, &[])
}

/// `gantry serve` with `env` added to its environment.
pub(super) fn serve_with(s: &Scratch, env: &[(&str, &str)]) -> Served {
    let mut child = s
        .gantry()
        .envs(env.iter().copied())
        .env("XDG_CONFIG_HOME", s.dir.path().join("xdg"))
        .env("MOCK_KEY", "sk-mock-0123456789")
        .args([
            "serve",
            "--listen-addr",
            "127.0.0.1:0",
            "--http-addr",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut http, mut grpc) = (None, None);
    while http.is_none() || grpc.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("gantry serve announces its addresses");
        if let Some(rest) =
            line.strip_prefix("gantry: serving the HTTP API and dashboard on http://")
        {
            http = Some(rest.trim_end_matches('/').to_owned());
        }
        if let Some(rest) =
            line.strip_prefix("gantry: serving a3s.code.agent.v1.CodeAgentService on ")
        {
            grpc = Some(rest.to_owned());
        }
    }
    Served {
        child,
        http: http.expect("http"),
        grpc: grpc.expect("grpc"),
        _lines: rx,
    }
}

/// One SSE event: its id, type and data.
type Sse = (String, String, Value);

/// The config file naming `llm` as the default model's provider.
pub(super) fn configure(s: &Scratch, llm: &MockLlm) {
    let dir = s.dir.path().join("xdg/gantry");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "default_model = \"mock/gpt-4.1\"\n[providers.mock]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\napi_key_env = \"MOCK_KEY\"\n",
            llm.base_url()
        ),
    )
    .expect("config");
}

/// Stops a server with SIGTERM; it must exit cleanly.
pub(super) async fn stop(served: Served) {
    let mut child = served.child;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

/// Reads SSE events until one of type `until`.
async fn read_until<S>(events: &mut S, until: &str) -> Vec<Sse>
where
    S: futures_util::Stream<
            Item = Result<
                eventsource_stream::Event,
                eventsource_stream::EventStreamError<reqwest::Error>,
            >,
        > + Unpin,
{
    let mut seen = Vec::new();
    while !seen.iter().any(|e: &Sse| e.1 == until) {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("an event in time")
            .expect("open")
            .expect("event");
        seen.push((e.id, e.event, serde_json::from_str(&e.data).expect("JSON")));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_client_resumes_after_the_server_is_killed_mid_answer() {
    let s = Scratch::new();
    // A slow answer: the kill lands in its middle.
    let answer = "one two three four five six seven eight nine ten eleven twelve";
    let llm = MockLlm::start(Script::new(vec![
        Step::text(answer).with_chunk_size(4).with_delay_ms(150),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let mut first = serve(&s);
    let made: Value = web
        .post(format!("http://{}/v1/threads", first.http))
        .json(&json!({}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("JSON");
    let id = made["id"].as_str().expect("id").to_owned();
    let resp = web
        .post(format!("http://{}/v1/threads/{id}/messages", first.http))
        .json(&json!({"text": "count"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);

    let mut seen: Vec<Sse> = Vec::new();
    {
        let resp = web
            .get(format!("http://{}/v1/threads/{id}/events", first.http))
            .send()
            .await
            .expect("events");
        let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
        while seen.iter().filter(|e| e.1 == "delta").count() < 3 {
            let e = tokio::time::timeout(Duration::from_secs(30), events.next())
                .await
                .expect("an event in time")
                .expect("open")
                .expect("event");
            seen.push((e.id, e.event, serde_json::from_str(&e.data).expect("JSON")));
        }
    }
    first.child.kill().expect("kill -9");
    first.child.wait().expect("reap");

    let second = serve(&s);
    let last = seen.last().expect("events").0.clone();
    let resp = web
        .get(format!("http://{}/v1/threads/{id}/events", second.http))
        .header("last-event-id", &last)
        .send()
        .await
        .expect("resume");
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    let rest = read_until(&mut events, "turn_completed").await;
    let ended = rest.last().expect("turn_completed");
    assert_eq!(ended.2["payload"]["status"], "interrupted", "{rest:?}");
    // Every seq once, in order, across the two servers.
    let seqs: Vec<u64> = seen
        .iter()
        .chain(&rest)
        .filter(|e| e.1 != "delta")
        .map(|e| e.0.parse().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "{seen:?} {rest:?}"
    );
    // No text twice: what was streamed is a prefix of the answer.
    let streamed: String = seen
        .iter()
        .chain(&rest)
        .filter(|e| e.1 == "delta")
        .map(|e| e.2["text"].as_str().unwrap_or_default())
        .collect();
    assert!(
        answer.starts_with(&streamed) && !streamed.is_empty(),
        "{streamed:?}"
    );

    stop(second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_thread_is_followed_and_steered_over_http_and_approved_in_the_dashboard() {
    use proto_code_agent::pb;
    use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;

    let s = Scratch::new();
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": "touch approved.txt && echo from-grpc"}),
        ),
        Step::text("Done, with the steer heard."),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let served = serve(&s);
    let mut a3s = CodeAgentServiceClient::connect(format!("http://{}", served.grpc))
        .await
        .expect("connect");
    let session = a3s
        .create_session(pb::CreateSessionRequest::default())
        .await
        .expect("CreateSession")
        .into_inner()
        .session_id;
    let set = a3s
        .set_confirmation_policy(pb::SetConfirmationPolicyRequest {
            session_id: session.clone(),
            policy: Some(pb::ConfirmationPolicy {
                enabled: true,
                require_confirm_tools: vec!["shell".into()],
                default_timeout_ms: 120_000,
                timeout_action: pb::TimeoutAction::Reject as i32,
                ..Default::default()
            }),
        })
        .await
        .expect("SetConfirmationPolicy")
        .into_inner();
    assert!(set.success);

    // Followed over HTTP from before the gRPC turn starts.
    let resp = web
        .get(format!(
            "http://{}/v1/threads/{session}/events",
            served.http
        ))
        .send()
        .await
        .expect("events");
    assert_eq!(resp.status(), 200);
    let mut events = eventsource_stream::EventStream::new(resp.bytes_stream());
    let generate = {
        let mut a3s = a3s.clone();
        let session = session.clone();
        tokio::spawn(async move {
            let mut stream = a3s
                .stream_generate(pb::GenerateRequest {
                    session_id: session,
                    messages: vec![pb::Message {
                        role: "user".into(),
                        content: "make the file".into(),
                        ..Default::default()
                    }],
                })
                .await
                .expect("StreamGenerate")
                .into_inner();
            let mut chunks = Vec::new();
            while let Some(chunk) = stream.message().await.expect("chunk") {
                chunks.push(chunk);
            }
            chunks
        })
    };
    let asked = loop {
        let seen = read_until(&mut events, "item_started").await;
        let last = seen.last().expect("event");
        if last.2["payload"]["item"]["type"] == "approval" {
            break last.2["payload"]["item"]["approval_id"]
                .as_str()
                .expect("approval id")
                .to_owned();
        }
    };

    // Steered over HTTP while the gRPC turn waits on its approval.
    let steer: Value = web
        .post(format!(
            "http://{}/v1/threads/{session}/messages",
            served.http
        ))
        .json(&json!({"text": "and say it was steered", "if_busy": "steer"}))
        .send()
        .await
        .expect("steer")
        .json()
        .await
        .expect("JSON");
    let turn = steer["turn_id"]
        .as_str()
        .expect("the running turn")
        .to_owned();
    // Answered in the dashboard, where the gRPC thread shows live.
    let browser = gantry_testkit::browser::Browser::start().await;
    browser
        .goto(&format!("http://{}/#/t/{session}", served.http))
        .await;
    browser.wait_text("make the file").await;
    browser.click(&format!("[data-approve='{asked}']")).await;

    // The gRPC client sees its turn go on and end.
    let chunks = tokio::time::timeout(Duration::from_secs(30), generate)
        .await
        .expect("the gRPC turn ends")
        .expect("join");
    let text: String = chunks
        .iter()
        .filter(|c| c.r#type == "content")
        .map(|c| c.content.as_str())
        .collect();
    assert!(text.contains("Done, with the steer heard."), "{chunks:?}");
    assert!(chunks.iter().any(|c| c.r#type == "done"), "{chunks:?}");
    assert!(
        s.workspace().join("approved.txt").exists(),
        "the approved command ran"
    );
    let ended = read_until(&mut events, "turn_completed").await;
    let done = ended.last().expect("turn_completed");
    assert_eq!(done.2["payload"]["turn_id"], turn.as_str());
    assert_eq!(done.2["payload"]["status"], "completed");
    // The steer reached the model in the same turn.
    let last_request = llm.requests().last().expect("requests").body.to_string();
    assert!(
        last_request.contains("and say it was steered"),
        "{last_request}"
    );
    drop(browser);
    drop(a3s);
    stop(served).await;
}

/// `schemathesis` fuzzes the API from its own document against a real
/// server and finds no 5xx. Left out: the event streams (they never end),
/// and creating MCP servers and jobs (they would run generated commands).
/// Found as `$GANTRY_TEST_SCHEMATHESIS`, else on PATH (`.ci/run` installs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_driven_fuzz_finds_no_server_error() {
    let s = Scratch::new();
    let llm = MockLlm::start(Script::new(Vec::<Step>::new())).expect("mock llm");
    configure(&s, &llm);
    let served = serve(&s);
    let binary =
        std::env::var("GANTRY_TEST_SCHEMATHESIS").unwrap_or_else(|_| "schemathesis".into());
    let url = format!("http://{}/openapi.json", served.http);
    let out = tokio::process::Command::new(&binary)
        .args(["run", &url, "--checks", "not_a_server_error"])
        .args([
            "--max-examples",
            "3",
            "--phases",
            "coverage,fuzzing",
            "--workers",
            "2",
        ])
        .args(["--request-timeout", "5", "--seed", "4080"])
        .args(["--exclude-path-regex", "^/v1/(mcp/servers|jobs)|/events$"])
        .current_dir(s.dir.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {binary} ({e}): .ci/run installs it from PyPI"));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{report}"
    );
    assert!(report.contains("passed"), "{report}");
    stop(served).await;
}

/// `/metrics` as PyPI's `prometheus_client` parses it: each sample as
/// `[name, labels, value]`.
fn scraped(text: &str) -> Vec<(String, Value, f64)> {
    let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import json, sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        print(json.dumps([[s.name, s.labels, s.value] \
            for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]))";
    let mut child = std::process::Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("parser");
    assert!(
        out.status.success(),
        "prometheus_client refused it ({}):\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, Value, f64)> =
        serde_json::from_slice(&out.stdout).expect("the parser's JSON");
    samples
}

/// The value of the sample named `name` whose labels include `labels`.
fn sample(samples: &[(String, Value, f64)], name: &str, labels: Value) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .as_object()
                    .into_iter()
                    .flatten()
                    .all(|(k, v)| &l[k] == v)
        })
        .map(|s| s.2)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_turn_its_tool_call_and_its_tokens() {
    let s = Scratch::new();
    let usage = |prompt, completion| UsageSpec {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..UsageSpec::default()
    };
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call("shell", json!({"command": "echo hi"})).with_usage(usage(100, 10)),
        Step::text("Said hi.").with_usage(usage(120, 5)),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let served = serve(&s);
    let scrape = || async {
        let resp = web
            .get(format!("http://{}/metrics", served.http))
            .send()
            .await
            .expect("metrics");
        assert_eq!(resp.status(), 200);
        let kind = resp.headers()["content-type"]
            .to_str()
            .expect("type")
            .to_owned();
        assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
        scraped(&resp.text().await.expect("text"))
    };
    let before = scrape().await;
    assert_eq!(
        sample(&before, "gantry_turns_started_total", json!({})),
        0.0
    );

    let made: Value = web
        .post(format!("http://{}/v1/threads", served.http))
        .json(&json!({}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("JSON");
    let id = made["id"].as_str().expect("id").to_owned();
    let events = web
        .get(format!("http://{}/v1/threads/{id}/events", served.http))
        .send()
        .await
        .expect("events");
    let mut events = eventsource_stream::EventStream::new(events.bytes_stream());
    let sent = web
        .post(format!("http://{}/v1/threads/{id}/messages", served.http))
        .json(&json!({"text": "say hi"}))
        .send()
        .await
        .expect("send");
    assert_eq!(sent.status(), 202);
    let seen = read_until(&mut events, "turn_completed").await;
    assert_eq!(
        seen.last().expect("ended").2["payload"]["status"],
        "completed"
    );

    // The collector follows the same feed: once it counted the turn's end,
    // the rest of the turn is counted too.
    let after = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let now = scrape().await;
            if sample(&now, "gantry_turns_completed_total", json!({})) >= 1.0 {
                return now;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the turn counted");
    let m = |name, labels| sample(&after, name, labels);
    assert_eq!(m("gantry_turns_started_total", json!({})), 1.0);
    assert_eq!(
        m(
            "gantry_turns_completed_total",
            json!({"status": "completed"})
        ),
        1.0
    );
    assert_eq!(
        m(
            "gantry_tool_calls_total",
            json!({"tool": "shell", "outcome": "completed"})
        ),
        1.0
    );
    assert_eq!(m("gantry_tool_call_duration_seconds_count", json!({})), 1.0);
    assert_eq!(m("gantry_model_responses_total", json!({})), 2.0);
    // Both requests timed, whole and to their first token.
    for histogram in [
        "gantry_model_request_duration_seconds",
        "gantry_model_time_to_first_token_seconds",
    ] {
        let (count, bucket) = (format!("{histogram}_count"), format!("{histogram}_bucket"));
        assert_eq!(sample(&after, &count, json!({})), 2.0);
        assert_eq!(sample(&after, &bucket, json!({"le": "+Inf"})), 2.0);
    }
    assert_eq!(
        m(
            "gantry_tokens_total",
            json!({"model": "mock/gpt-4.1", "direction": "input"})
        ),
        220.0
    );
    assert_eq!(
        m(
            "gantry_tokens_total",
            json!({"model": "mock/gpt-4.1", "direction": "output"})
        ),
        15.0
    );
    assert_eq!(m("gantry_turns_running", json!({})), 0.0);
    assert_eq!(
        m("gantry_threads_loaded", json!({})),
        1.0,
        "the thread made"
    );
    // Nothing in it names a thread.
    assert!(after.iter().all(|(_, l, _)| !l.to_string().contains(&id)));
    stop(served).await;
}

#[tokio::test]
async fn checkpoints_are_listed_rewound_and_forked_with_curl() {
    use crate::runner_control_plane::curl;

    let s = Scratch::new();
    std::fs::write(s.workspace().join("notes.txt"), "before\n").expect("file");
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": "echo after > notes.txt && echo new > made.txt"}),
        ),
        Step::text("Changed."),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let served = serve(&s);
    let base = format!("http://{}", served.http);
    let ws = s.workspace().canonicalize().expect("workspace");
    let url = base.clone();
    let ws_text = ws.display().to_string();
    let (status, checkpoints, rewound, fork) = tokio::task::spawn_blocking(move || {
        let (status, thread) = curl(
            "POST",
            &format!("{url}/v1/threads"),
            Some(json!({"workspace": ws_text})),
        );
        assert_eq!(status, 201, "{thread}");
        let id = thread["id"].as_str().expect("id").to_owned();
        let (status, turn) = curl(
            "POST",
            &format!("{url}/v1/threads/{id}/messages?wait=true"),
            Some(json!({"text": "change the notes"})),
        );
        assert!(status == 200 || status == 202, "{status} {turn}");
        let (status, checkpoints) =
            curl("GET", &format!("{url}/v1/threads/{id}/checkpoints"), None);
        let checkpoint = checkpoints["checkpoints"][0]["id"].clone();
        let (_, rewound) = curl(
            "POST",
            &format!("{url}/v1/threads/{id}/rewind"),
            Some(json!({"checkpoint": checkpoint})),
        );
        let (_, fork) = curl(
            "POST",
            &format!("{url}/v1/threads/{id}/fork"),
            Some(json!({"checkpoint": checkpoint})),
        );
        (status, checkpoints, rewound, fork)
    })
    .await
    .expect("curl");
    assert_eq!(status, 200, "{checkpoints}");
    assert_eq!(
        checkpoints["checkpoints"].as_array().map(Vec::len),
        Some(1),
        "{checkpoints}"
    );
    assert!(rewound["thread"]["id"].is_string(), "{rewound}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).expect("notes"),
        "before\n"
    );
    assert!(!ws.join("made.txt").exists());
    let fork_dir = std::path::PathBuf::from(fork["workspace"].as_str().expect("fork's workspace"));
    assert_eq!(
        std::fs::read_to_string(fork_dir.join("notes.txt")).expect("fork's notes"),
        "before\n"
    );
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_job_added_with_the_cli_runs_under_serve_as_a_turn() {
    use crate::runner_control_plane::curl;

    let s = Scratch::new();
    let llm = MockLlm::start(Script::new(vec![
        Step::text("All quiet."),
        Step::text("All quiet."),
        Step::text("All quiet."),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let ws = s.workspace().canonicalize().expect("workspace");
    let ws_text = ws.display().to_string();
    // Every second, so that the test need not wait for a real schedule.
    let added = s.run(&[
        "jobs",
        "add",
        "watch",
        "--schedule",
        "* * * * * *",
        "--agent",
        "Anything to report?",
        "--model",
        "mock/gpt-4.1",
        "--workspace",
        &ws_text,
        "--json",
    ]);
    assert!(added.status.success(), "{}", crate::common::stderr(&added));
    let job: Value = serde_json::from_str(&crate::common::stdout(&added)).expect("job JSON");
    let id = job["id"].as_str().expect("id").to_owned();
    let thread = job["action"]["thread_id"]
        .as_str()
        .expect("thread")
        .to_owned();
    let again = s.run(&[
        "jobs",
        "add",
        "watch",
        "--schedule",
        "every hour",
        "--command",
        "true",
    ]);
    assert!(!again.status.success());
    assert!(
        crate::common::stderr(&again).contains("already exists"),
        "{}",
        crate::common::stderr(&again)
    );

    let served = serve(&s);
    let url = format!("http://{}", served.http);
    let (run, view) = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (_, runs) = curl("GET", &format!("{url}/v1/jobs/{id}/runs"), None);
            let done = runs["items"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["status"] != "running").cloned());
            if let Some(run) = done {
                curl(
                    "PATCH",
                    &format!("{url}/v1/jobs/{id}"),
                    Some(json!({"status": "paused"})),
                );
                let (_, view) = curl("GET", &format!("{url}/v1/threads/{thread}"), None);
                return (run, view);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no run ended in time: {runs}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    })
    .await
    .expect("curl");
    assert_eq!(
        (run["status"].as_str(), run["stdout"].as_str()),
        (Some("success"), Some("All quiet.")),
        "{run}"
    );
    let turn = &view["turns"][0];
    assert_eq!(turn["status"], "completed", "{view}");
    assert_eq!(view["thread"]["workspace"], ws_text.as_str(), "{view}");
    stop(served).await;
    let runs = s.run(&["jobs", "runs", "watch", "--json"]);
    assert!(runs.status.success(), "{}", crate::common::stderr(&runs));
    let runs: Value = serde_json::from_str(&crate::common::stdout(&runs)).expect("runs JSON");
    assert!(
        runs["runs"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["status"] == "success")),
        "{runs}"
    );
}

#[tokio::test]
async fn a_rewind_answered_survives_a_kill_9_with_the_tree_and_the_thread_agreeing() {
    use crate::runner_control_plane::curl;

    let s = Scratch::new();
    let ws = s.workspace().canonicalize().expect("workspace");
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call("shell", json!({"command": "echo one > a.txt"})),
        Step::text("One."),
        Step::tool_call(
            "shell",
            json!({"command": "echo two > a.txt && echo b > b.txt"}),
        ),
        Step::text("Two."),
        Step::tool_call("shell", json!({"command": "echo three > c.txt"})),
        Step::text("Three."),
    ]))
    .expect("mock llm");
    configure(&s, &llm);
    let served = serve(&s);
    let url = format!("http://{}", served.http);
    let ws_text = ws.display().to_string();
    let (source, continued) = tokio::task::spawn_blocking(move || {
        let (status, thread) = curl(
            "POST",
            &format!("{url}/v1/threads"),
            Some(json!({"workspace": ws_text})),
        );
        assert_eq!(status, 201, "{thread}");
        let id = thread["id"].as_str().expect("id").to_owned();
        for text in ["write one", "write two"] {
            let (status, turn) = curl(
                "POST",
                &format!("{url}/v1/threads/{id}/messages?wait=true"),
                Some(json!({ "text": text })),
            );
            assert!(status == 200 || status == 202, "{status} {turn}");
        }
        let (_, checkpoints) = curl("GET", &format!("{url}/v1/threads/{id}/checkpoints"), None);
        let second = checkpoints["checkpoints"][1]["id"].clone();
        let (status, rewound) = curl(
            "POST",
            &format!("{url}/v1/threads/{id}/rewind"),
            Some(json!({ "checkpoint": second })),
        );
        assert_eq!(status, 200, "{rewound}");
        let continued = rewound["thread"]["id"].as_str().expect("thread").to_owned();
        (id, continued)
    })
    .await
    .expect("curl");
    // Killed the moment the answer is in: nothing after it may be needed.
    let mut child = served.child;
    child.kill().expect("kill -9");
    child.wait().expect("reaped");

    let served = serve(&s);
    let url = format!("http://{}", served.http);
    let (continued_view, source_view, rewind_again) = tokio::task::spawn_blocking(move || {
        let (_, continued_view) = curl("GET", &format!("{url}/v1/threads/{continued}"), None);
        let (_, source_view) = curl("GET", &format!("{url}/v1/threads/{source}"), None);
        // The continuation goes on in the rewound tree, and its own
        // checkpoint takes it back without a conflict: its store carried on.
        let (status, turn) = curl(
            "POST",
            &format!("{url}/v1/threads/{continued}/messages?wait=true"),
            Some(json!({"text": "write three"})),
        );
        assert!(status == 200 || status == 202, "{status} {turn}");
        let (_, checkpoints) = curl(
            "GET",
            &format!("{url}/v1/threads/{continued}/checkpoints"),
            None,
        );
        let (status, rewound) = curl(
            "POST",
            &format!("{url}/v1/threads/{continued}/rewind"),
            Some(json!({"checkpoint": checkpoints["checkpoints"][0]["id"]})),
        );
        (continued_view, source_view, (status, checkpoints, rewound))
    })
    .await
    .expect("curl");
    assert_eq!(
        continued_view["turns"].as_array().map(Vec::len),
        Some(1),
        "the turn before the checkpoint's: {continued_view}"
    );
    assert_eq!(
        source_view["turns"].as_array().map(Vec::len),
        Some(2),
        "the source keeps both: {source_view}"
    );
    let (status, checkpoints, rewound) = rewind_again;
    // Taken before the turn wrote c.txt, in the tree the rewind left: no
    // file changed since the rewound checkpoint (a store begun afresh
    // would name every file).
    assert_eq!(
        checkpoints["checkpoints"][0]["files_changed"],
        json!([]),
        "{checkpoints}"
    );
    assert_eq!(status, 200, "{rewound}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("a"),
        "one\n"
    );
    assert!(!ws.join("b.txt").exists());
    assert!(!ws.join("c.txt").exists());
    stop(served).await;
}
