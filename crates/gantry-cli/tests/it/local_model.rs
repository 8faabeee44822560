//! Real turns on a real model: `gantry exec` and `gantry serve` pointed at
//! llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct
//! (`gantry_testkit::local_model`). A 135M model's commands are whatever it
//! makes up, so these assert what the runtime does with them: the call is
//! parsed and run, its result goes back to the model, the turn ends and its
//! tokens are counted. Never what the model says.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use gantry_testkit::local_model::{CONTEXT_WINDOW, LocalModel, MODEL};
use serde_json::{Value, json};

use crate::common::{Scratch, json_lines, stderr};

/// A command the agent ran: the item's `exit_code` says the shell ran it,
/// whatever the command was.
fn ran_commands(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item.completed" && l["item"]["type"] == "command_execution")
        .map(|l| &l["item"])
        .collect()
}

#[test]
fn exec_runs_the_real_models_tool_call_and_sends_back_its_result() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let s = Scratch::new();
    std::fs::write(s.workspace().join("notes.txt"), "one\n").expect("a file");
    let out = s.run(&[
        "exec",
        "--json",
        "--base-url",
        &server.base_url(),
        "--model",
        MODEL,
        // This server offers tools only with a tool_choice; the named one
        // goes with the turn's first request only.
        "--tool-choice",
        "shell",
        "--context-window",
        &CONTEXT_WINDOW.to_string(),
        "--max-rounds",
        "2",
        "--sandbox",
        "read-only",
        "List the files in this directory with the shell tool.",
    ]);
    let lines = json_lines(&out);
    let last = lines.last().expect("a last line");
    // Two rounds: the call, then the model's answer to its result (or a
    // second call, which the round limit stops). Both end the turn.
    assert!(
        last["type"] == "turn.completed" || last["type"] == "turn.failed",
        "{last}\n{}",
        stderr(&out)
    );
    let ran = ran_commands(&lines);
    assert!(!ran.is_empty(), "the call was parsed and run: {lines:#?}");
    assert!(parsed_and_answered(ran[0]), "{}", ran[0]);
    assert_eq!(
        last["rounds"], 2,
        "its result went back to the model: {last}"
    );
    let usage = &last["usage"];
    assert!(usage["input_tokens"].as_u64() > Some(0), "{usage}");
    assert!(usage["output_tokens"].as_u64() > Some(0), "{usage}");
    assert!(
        !stderr(&out).contains("model stream ended early"),
        "{}",
        stderr(&out)
    );
}

/// Whether a command item holds a command parsed from the call's
/// arguments and the tool's answer to it: an exit code, or the tool's
/// refusal (a small model often names a `workdir` outside the workspace).
fn parsed_and_answered(item: &Value) -> bool {
    let command = item["command"].as_str().unwrap_or_default();
    let refused = item["error"].as_str().or(item["output"].as_str());
    !command.is_empty() && (item["exit_code"].is_i64() || refused.is_some_and(|e| !e.is_empty()))
}

/// A running `gantry serve` on the local model.
struct Served {
    child: std::process::Child,
    http: String,
    grpc: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(s: &Scratch, server: &LocalModel) -> Served {
    let dir = s.dir.path().join("xdg/gantry");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "default_model = \"local/{MODEL}\"\n\
             [providers.local]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n\
             models = [\"{MODEL}\"]\ntool_choice = \"shell\"\n\
             [models.\"{MODEL}\"]\nlimit = {{ context = {CONTEXT_WINDOW}, output = 512 }}\n",
            server.base_url()
        ),
    )
    .expect("config");
    let mut child = s
        .gantry()
        .env("XDG_CONFIG_HOME", s.dir.path().join("xdg"))
        .args([
            "serve",
            "--listen-addr",
            "127.0.0.1:0",
            "--http-addr",
            "127.0.0.1:0",
        ])
        .args(["--max-rounds", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gantry serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (mut http, mut grpc) = (None, None);
    while http.is_none() || grpc.is_none() {
        let line = lines
            .next()
            .expect("gantry serve announces its addresses")
            .expect("stderr");
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
    std::thread::spawn(move || lines.for_each(drop));
    Served {
        child,
        http: http.expect("http"),
        grpc: grpc.expect("grpc"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_tool_turns_on_the_real_model_over_http_and_a3s() {
    use proto_code_agent::pb;
    use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;

    let Some(server) = LocalModel::start() else {
        return;
    };
    let s = Scratch::new();
    let served = serve(&s, &server);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    // The HTTP API: a thread, a message, the turn followed to its end.
    let thread: Value = web
        .post(format!("http://{}/v1/threads", served.http))
        .json(&json!({"workspace": s.workspace()}))
        .send()
        .await
        .expect("create thread")
        .json()
        .await
        .expect("JSON");
    let id = thread["id"].as_str().expect("thread id").to_owned();
    let sent = web
        .post(format!("http://{}/v1/threads/{id}/messages", served.http))
        .json(&json!({"text": "List the files here with the shell tool."}))
        .send()
        .await
        .expect("message");
    assert_eq!(sent.status(), 202, "{:?}", sent.text().await);
    let view = tokio::time::timeout(Duration::from_secs(300), async {
        loop {
            let view: Value = web
                .get(format!("http://{}/v1/threads/{id}", served.http))
                .send()
                .await
                .expect("thread")
                .json()
                .await
                .expect("JSON");
            let status = &view["turns"][0]["status"];
            if status != "running" && !status.is_null() {
                return view;
            }
            // The turn ends on the model's time; the view is asked again.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("the HTTP turn ends");
    let items = view["turns"][0]["items"].as_array().expect("items");
    let command = items
        .iter()
        .find(|i| i["type"] == "command_execution")
        .unwrap_or_else(|| panic!("the call ran: {view:#}"));
    assert!(parsed_and_answered(command), "{command}");
    let arguments = command["tool_call"]["arguments"]
        .as_str()
        .unwrap_or_default();
    assert!(
        serde_json::from_str::<Value>(arguments).is_ok_and(|a| a.is_object()),
        "the server's arguments, whole: {command}"
    );

    // A3S: a session, a streamed generation, the tool's events paired.
    let mut a3s = CodeAgentServiceClient::connect(format!("http://{}", served.grpc))
        .await
        .expect("connect");
    let session = a3s
        .create_session(pb::CreateSessionRequest::default())
        .await
        .expect("CreateSession")
        .into_inner()
        .session_id;
    let mut stream = a3s
        .stream_generate(pb::GenerateRequest {
            session_id: session,
            messages: vec![pb::Message {
                role: "user".into(),
                content: "List the files here with the shell tool.".into(),
                ..Default::default()
            }],
        })
        .await
        .expect("StreamGenerate")
        .into_inner();
    let mut chunks = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(300), async {
        loop {
            match stream.message().await {
                Ok(Some(chunk)) => chunks.push(chunk),
                Ok(None) => return None,
                Err(status) => return Some(status),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the A3S turn ends: {chunks:?}"));
    let kinds: Vec<&str> = chunks.iter().map(|c| c.r#type.as_str()).collect();
    assert!(kinds.contains(&"tool_call"), "{kinds:?}");
    assert!(kinds.contains(&"tool_result"), "{kinds:?}");
    // The model answers its result, or calls again and the round limit
    // ends the turn, saying so: either way the turn ended.
    match ended {
        None => assert!(kinds.contains(&"done"), "{kinds:?}"),
        Some(status) => assert!(
            status.message().contains("model rounds"),
            "{status:?} after {kinds:?}"
        ),
    }
}
