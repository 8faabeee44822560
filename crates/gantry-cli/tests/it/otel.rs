//! Traces: `gantry serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` exports a
//! turn's spans in the GenAI conventions to an OTLP receiver Gantry did
//! not write (Python, opentelemetry-proto's messages; over HTTP, or over
//! gRPC with grpcio and opentelemetry-proto's own service), continuing the
//! trace the request's `traceparent` named; without the variables nothing
//! is exported and nothing more is listened on.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use gantry_testkit::{MockLlm, Script, Step, UsageSpec};
use serde_json::{Value, json};

use crate::common::Scratch;
use crate::http_serve::{Served, configure, serve_with, stop};

/// The Python receiver and the spans it printed.
struct Receiver_ {
    child: Child,
    port: u16,
    lines: Receiver<String>,
}

impl Receiver_ {
    /// Starts an OTLP/HTTP one on `port` (0: any free one).
    fn start(port: u16) -> Self {
        Self::start_with(&[&port.to_string()])
    }

    /// Starts an OTLP/gRPC one on any free port.
    fn start_grpc() -> Self {
        Self::start_with(&["--grpc", "0"])
    }

    fn start_with(args: &[&str]) -> Self {
        let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/otlp_receiver.py");
        let mut child = Command::new(&python)
            .arg(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines.recv_timeout(Duration::from_secs(30)).expect(
            "the receiver starts (are opentelemetry-proto and grpcio installed? see .ci/run)",
        );
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a port: {first}"));
        Receiver_ { child, port, lines }
    }

    /// Every span received until one named `invoke_agent ...` ended.
    fn spans_of_a_turn(&self) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut spans = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no invoke_agent span in time; got {spans:#?}"));
            let span: Value = serde_json::from_str(&line).expect("JSON");
            let done = span["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("invoke_agent "));
            spans.push(span);
            if done {
                return spans;
            }
        }
    }

    /// What it printed, once it has no more to say (after the server stopped).
    fn rest(self) -> Vec<String> {
        let mut child = self.child;
        let _ = child.kill();
        let _ = child.wait();
        self.lines.try_iter().collect()
    }
}

fn usage(prompt: u64, completion: u64) -> UsageSpec {
    UsageSpec {
        prompt_tokens: prompt,
        completion_tokens: completion,
        ..UsageSpec::default()
    }
}

fn web() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// Creates a thread and runs one turn on it to its end; the turn as the API shows it.
async fn one_turn(
    web: &reqwest::Client,
    served: &Served,
    traceparent: Option<&str>,
) -> (String, Value) {
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
    let mut send = web
        .post(format!(
            "http://{}/v1/threads/{id}/messages?wait=true",
            served.http
        ))
        .json(&json!({"text": "say hi"}));
    if let Some(tp) = traceparent {
        send = send.header("traceparent", tp);
    }
    let sent = send.send().await.expect("send");
    assert_eq!(sent.status(), 200);
    let answer: Value = sent.json().await.expect("JSON");
    let turn = answer["turn"].clone();
    assert_eq!(turn["status"], "completed", "{turn}");
    (id, turn)
}

/// The model the scripted answers name, a dated snapshot as real APIs
/// answer with: not the one asked for.
const ANSWERED_BY: &str = "gpt-4.1-2025-04-14";

fn script() -> Script {
    Script::new(vec![
        Step::tool_call("shell", json!({"command": "echo hi"}))
            .with_usage(usage(100, 10))
            .with_model(ANSWERED_BY),
        Step::text("Said hi.")
            .with_usage(usage(120, 5))
            .with_model(ANSWERED_BY),
    ])
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_traced_in_the_genai_conventions_under_the_callers_span() {
    a_turn_is_traced(Receiver_::start(0), &[]).await;
}

/// The same spans over gRPC: the endpoint as given (no path), the
/// exporter's channel on the daemon's runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_traced_over_grpc_as_over_http() {
    a_turn_is_traced(
        Receiver_::start_grpc(),
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    )
    .await;
}

/// Stopping sends what is still batched: the gRPC exporter, whose channel
/// runs on the daemon's runtime, is flushed before that runtime ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_still_batched_at_stop_are_sent_over_grpc() {
    let s = Scratch::new();
    let llm = MockLlm::start(script()).expect("mock llm");
    configure(&s, &llm);
    let receiver = Receiver_::start_grpc();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with(
        &s,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            // Nothing is sent on a schedule within the test.
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    );
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    one_turn(
        &web(),
        &served,
        Some(&format!("00-{trace}-00f067aa0ba902b7-01")),
    )
    .await;
    stop(served).await;
    let spans = receiver.spans_of_a_turn();
    assert_eq!(named(&spans, "chat ").len(), 2, "{spans:#?}");
    assert_eq!(named(&spans, "execute_tool ").len(), 1, "{spans:#?}");
    assert!(spans.iter().all(|s| s["trace_id"] == trace), "{spans:#?}");
    let rest = receiver.rest();
    assert!(
        !rest.iter().any(|l| l.contains("unexpected")),
        "only the traces export was sent: {rest:?}"
    );
}

/// Runs a turn with a tool call against `receiver`, under a caller's
/// `traceparent`, and checks every span of it; `vars` say how to send.
async fn a_turn_is_traced(receiver: Receiver_, vars: &[(&str, &str)]) {
    let s = Scratch::new();
    let llm = MockLlm::start(script()).expect("mock llm");
    configure(&s, &llm);
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "gantry-under-test"),
        (
            "OTEL_SEMCONV_STABILITY_OPT_IN",
            "gen_ai_latest_experimental",
        ),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ];
    env.extend_from_slice(vars);
    let served = serve_with(&s, &env);
    let web = web();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    let (thread, turn) = one_turn(&web, &served, Some(&format!("00-{trace}-{caller}-01"))).await;
    let spans = receiver.spans_of_a_turn();
    assert!(has_exporter_thread(served.child.id()), "the exporter runs");

    for span in &spans {
        assert_eq!(span["trace_id"], trace, "one trace, the caller's: {span}");
        assert_eq!(span["service"], "gantry-under-test");
        assert!(span["end"].as_u64() >= span["start"].as_u64(), "{span}");
    }
    let [agent] = named(&spans, "invoke_agent ")[..] else {
        panic!("one invoke_agent span: {spans:#?}");
    };
    assert_eq!(agent["name"], "invoke_agent gantry");
    assert_eq!(
        agent["parent_span_id"], caller,
        "the caller's span is its parent"
    );
    let a = &agent["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.agent.name"], "gantry");
    assert_eq!(a["gen_ai.provider.name"], "openai");
    assert_eq!(a["gen_ai.conversation.id"], thread.as_str());
    assert_eq!(a["gen_ai.request.model"], "mock/gpt-4.1");
    // The turn's usage as the API reports it.
    assert_eq!(
        a["gen_ai.usage.input_tokens"],
        turn["usage"]["input_tokens"]
    );
    assert_eq!(
        a["gen_ai.usage.output_tokens"],
        turn["usage"]["output_tokens"]
    );
    assert_eq!(turn["usage"]["input_tokens"], 220);
    assert!(a.get("error.type").is_none(), "{a}");
    assert!(
        a.get("gen_ai.input.messages").is_none(),
        "no content unless opted in"
    );

    let chats = named(&spans, "chat ");
    assert_eq!(
        chats.len(),
        2,
        "one chat span per model request: {spans:#?}"
    );
    let agent_span = agent["span_id"].as_str().expect("id");
    // The span id the turn's log lines carry: its id's low 64 bits.
    let turn_id = turn["id"].as_str().expect("a turn id").replace('-', "");
    assert_eq!(agent_span, &turn_id[16..], "the turn's own span id");
    let mut input = 0;
    // The scripted server names its n-th answer `chatcmpl-gantry<n>`.
    let answers = [
        ("tool_calls", "chatcmpl-gantry1"),
        ("stop", "chatcmpl-gantry2"),
    ];
    for (chat, (finish, id)) in chats.iter().zip(answers) {
        assert_eq!(chat["name"], "chat mock/gpt-4.1");
        assert_eq!(chat["parent_span_id"], agent_span);
        assert_eq!(chat["kind"], 3, "a client span");
        let c = &chat["attributes"];
        assert_eq!(c["gen_ai.operation.name"], "chat");
        assert_eq!(c["gen_ai.provider.name"], "openai");
        assert_eq!(c["gen_ai.request.model"], "mock/gpt-4.1");
        assert_eq!(c["gen_ai.response.finish_reasons"], json!([finish]));
        assert_eq!(c["gen_ai.response.id"], id, "{c}");
        assert_eq!(c["gen_ai.response.model"], ANSWERED_BY, "{c}");
        assert!(
            c["gen_ai.response.time_to_first_chunk"].as_f64() >= Some(0.0),
            "{c}"
        );
        input += c["gen_ai.usage.input_tokens"]
            .as_u64()
            .expect("input tokens");
    }
    assert_eq!(Some(input), turn["usage"]["input_tokens"].as_u64());
    // What was asked for is not what answered: the attribute is the answer's.
    let asked: Vec<Value> = llm
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(asked, [json!("gpt-4.1"), json!("gpt-4.1")]);
    // Each request told the provider its place in the trace: its own
    // `chat` span, under the caller's trace.
    let sent: Vec<String> = llm
        .requests()
        .iter()
        .map(|r| r.header("traceparent").unwrap_or_default().to_owned())
        .collect();
    let spans_named: Vec<String> = chats
        .iter()
        .map(|c| {
            format!(
                "00-{trace}-{}-01",
                c["span_id"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(sent, spans_named, "the model requests' traceparent");

    let [tool] = named(&spans, "execute_tool ")[..] else {
        panic!("one execute_tool span: {spans:#?}");
    };
    assert_eq!(tool["name"], "execute_tool shell");
    assert_eq!(tool["parent_span_id"], agent_span);
    let t = &tool["attributes"];
    assert_eq!(t["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t["gen_ai.tool.name"], "shell");
    assert_eq!(t["gen_ai.tool.type"], "function");
    assert!(
        t["gen_ai.tool.call.id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{t}"
    );
    assert!(t.get("error.type").is_none(), "{t}");
    // The tool ran between the two model requests.
    assert!(tool["start"].as_u64() >= chats[0]["end"].as_u64());
    assert!(tool["end"].as_u64() <= chats[1]["start"].as_u64());

    stop(served).await;
    let rest = receiver.rest();
    assert!(
        !rest.iter().any(|l| l.contains("unexpected")),
        "only the traces export was sent: {rest:?}"
    );
}

/// The TCP ports `pid` listens on (its sockets, found in /proc/net/tcp).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // `0A` is LISTEN.
            if cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9]) {
                let port = cols[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                ports.extend(port);
            }
        }
    }
    ports.sort_unstable();
    ports
}

/// Whether `pid` has the batch span processor's thread.
fn has_exporter_thread(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .any(|name| name.starts_with("OpenTelemetry"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_otel_variables_nothing_is_exported_and_nothing_more_listens() {
    let s = Scratch::new();
    let llm = MockLlm::start(script()).expect("mock llm");
    configure(&s, &llm);
    // Where an SDK left to its defaults would send (localhost:4318), when
    // that port is free here.
    let default_port = std::net::TcpListener::bind("127.0.0.1:4318")
        .ok()
        .map(drop)
        .map(|()| Receiver_::start(4318));
    let served = serve_with(&s, &[("OTEL_SERVICE_NAME", "gantry-under-test")]);
    let web = web();
    one_turn(
        &web,
        &served,
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    )
    .await;

    // Untraced here, but the caller's trace still goes on to the provider.
    for request in llm.requests() {
        let sent = request.header("traceparent").unwrap_or_default();
        assert!(
            sent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && sent.ends_with("-01"),
            "{sent}"
        );
    }

    let pid = served.child.id();
    let port = |addr: &str| addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
    let mut expected: Vec<u16> = [port(&served.http), port(&served.grpc)]
        .into_iter()
        .flatten()
        .collect();
    expected.sort_unstable();
    assert_eq!(
        listening_ports(pid),
        expected,
        "only the HTTP API and A3S listen"
    );
    assert!(!has_exporter_thread(pid), "no exporter runs");

    // Stopped: whatever it would have exported has been sent by now.
    stop(served).await;
    if let Some(receiver) = default_port {
        assert_eq!(
            receiver.rest(),
            Vec::<String>::new(),
            "nothing was exported"
        );
    }
}

/// `gantry exec` traces its turn too, and has exported every span by the
/// time it exits (a benchmark harness runs it once per task).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gantry_exec_exports_its_turn_before_it_exits() {
    let s = Scratch::new();
    let llm = MockLlm::start(script()).expect("mock llm");
    configure(&s, &llm);
    let receiver = Receiver_::start(0);
    let mut exec = s.gantry();
    exec.env("XDG_CONFIG_HOME", s.dir.path().join("xdg"))
        .env("MOCK_KEY", "sk-mock-0123456789")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", receiver.port),
        )
        .args([
            "exec",
            "--json",
            "--sandbox",
            "danger-full-access",
            "say hi",
        ]);
    // The model server answers on the runtime meanwhile.
    let out = tokio::task::spawn_blocking(move || exec.output())
        .await
        .expect("joined")
        .expect("run gantry");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exited: what it exported has all been received (the turn's span,
    // ending last, comes last).
    let names: Vec<String> = receiver
        .spans_of_a_turn()
        .iter()
        .filter_map(|span| span["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("invoke_agent "))
            .count(),
        1,
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| n.starts_with("chat ")).count(), 2);
    assert!(
        names.contains(&"execute_tool shell".to_owned()),
        "{names:?}"
    );
    // Its own trace goes on to the provider in each request.
    assert!(
        llm.requests()
            .iter()
            .all(|r| r.header("traceparent").is_some()),
        "the model requests carry the trace"
    );
    receiver.rest();
}
