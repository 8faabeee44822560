//! `gantry exec` end to end: the real binary, the scripted model over HTTP,
//! real tools in a temp workspace, a real SQLite store.

mod common;

use common::*;
use serde_json::{Value, json};

/// Ten tool rounds that write files with `shell` and change them with
/// `edit_file`, then a final answer.
fn ten_rounds() -> Value {
    let mut steps = Vec::new();
    for i in 1..=5 {
        steps.push(json!({"reply": {"text": format!("Creating file {i}."), "tool_calls": [
            {"name": "shell", "arguments": {"command": format!("printf 'value = {i}\\n' > f{i}.txt && cat f{i}.txt")}}
        ]}}));
        steps.push(json!({"reply": {"tool_calls": [
            {"name": "edit_file", "arguments": {"path": format!("f{i}.txt"), "old_string": format!("value = {i}"), "new_string": format!("value = {}", i * 10)}}
        ]}}));
    }
    steps.push(
        json!({"reply": {"text": "All five files are written and edited.", "chunk_size": 5}}),
    );
    json!({"steps": steps})
}

#[test]
fn ten_round_turn_writes_files_and_reports_every_item_in_order() {
    let s = Scratch::new();
    let model = s.script("ten.json", ten_rounds());
    let out = s.run(&["exec", "--json", "--model", &model, "write five files"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));

    for i in 1..=5 {
        assert_eq!(
            read(&s.workspace().join(format!("f{i}.txt"))),
            format!("value = {}\n", i * 10)
        );
    }
    let lines = json_lines(&out);
    let events: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "event").collect();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (seqs[0]..seqs[0] + seqs.len() as u64).collect::<Vec<_>>(),
        "dense, in order"
    );

    let completed: Vec<&str> = events
        .iter()
        .filter(|e| e["payload"]["type"] == "item_completed")
        .map(|e| e["payload"]["item"]["type"].as_str().unwrap())
        .collect();
    let mut expected = vec!["user_message"];
    for _ in 0..5 {
        expected.extend(["agent_message", "command_execution", "file_change"]);
    }
    expected.push("agent_message");
    assert_eq!(completed, expected);

    let command = events
        .iter()
        .find(|e| {
            e["payload"]["item"]["type"] == "command_execution"
                && e["payload"]["type"] == "item_completed"
        })
        .unwrap();
    assert_eq!(command["payload"]["item"]["exit_code"], 0);
    assert_eq!(command["payload"]["item"]["output"], "value = 1\n");
    let last = events.last().unwrap();
    assert_eq!(last["payload"]["type"], "turn_completed");
    assert_eq!(last["payload"]["status"], "completed");
    assert_eq!(last["payload"]["rounds"], 11);
    assert!(
        lines.iter().any(|l| l["kind"] == "delta"),
        "deltas are streamed too"
    );
}

#[test]
fn readable_view_on_stderr_final_answer_on_stdout() {
    let s = Scratch::new();
    let model = s.script("ten.json", ten_rounds());
    let out = s.run(&["exec", "--model", &model, "write five files"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "All five files are written and edited.\n");
    let err = stderr(&out);
    assert!(
        err.contains("$ printf 'value = 1\\n' > f1.txt && cat f1.txt"),
        "{err}"
    );
    assert!(err.contains("edited f1.txt (+1 -1)"), "{err}");
    assert!(err.contains("exit 0"), "{err}");
    assert!(
        err.contains("11 rounds") && err.contains("tokens in"),
        "{err}"
    );
}

#[test]
fn resume_continues_a_thread_with_its_history() {
    let s = Scratch::new();
    let first = s.script(
        "a.json",
        json!({"steps": [{"reply": {"text": "the answer is 42"}}]}),
    );
    let out = s.run(&["exec", "--json", "--model", &first, "what is the answer?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let thread = json_lines(&out)[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The resumed thread keeps its scripted model, so give it a new script
    // under the same path.
    let path = first.strip_prefix("scripted:").unwrap();
    std::fs::write(
        path,
        json!({"steps": [{"reply": {"text": "you asked about 42"}}]}).to_string(),
    )
    .unwrap();
    let out = s.run(&["exec", "--resume", &thread, "what did I ask?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "you asked about 42\n");

    let show = s.run(&["threads", "show", &thread, "--json"]);
    assert!(show.status.success(), "{}", stderr(&show));
    let view: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(view["turns"].as_array().unwrap().len(), 2);
    let list = s.run(&["threads", "list"]);
    assert!(stdout(&list).contains(&thread), "{}", stdout(&list));
    assert!(stdout(&list).contains("what is the answer?"));
}

#[test]
fn missing_api_key_is_one_clear_line() {
    let s = Scratch::new();
    let out = s.run(&["exec", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("scripted:"),
        "{err}"
    );
}

#[test]
fn unreachable_model_server_fails_the_turn_with_one_clear_line() {
    let s = Scratch::new();
    // Port 9 (discard) on loopback: nothing listens there.
    let out = s.run(&[
        "exec",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--max-retries",
        "0",
        "hello",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot reach model server at http://127.0.0.1:9"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn model_http_errors_fail_the_turn_and_keep_what_was_done() {
    let s = Scratch::new();
    let model = s.script(
        "e.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "kept.txt", "content": "kept"}}]}},
            {"error": {"status": 401}}
        ]}),
    );
    let out = s.run(&["exec", "--json", "--model", &model, "go"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(read(&s.workspace().join("kept.txt")), "kept");
    let lines = json_lines(&out);
    let error = lines
        .iter()
        .find(|l| {
            l["payload"]["type"] == "item_completed" && l["payload"]["item"]["type"] == "error"
        })
        .expect("error item");
    assert!(
        error["payload"]["item"]["message"]
            .as_str()
            .unwrap()
            .contains("authentication failed (HTTP 401)")
    );
    let thread = lines[0]["thread_id"].as_str().unwrap();
    let show = s.run(&["threads", "show", thread, "--json"]);
    let view: Value = serde_json::from_slice(&show.stdout).unwrap();
    let items = view["turns"][0]["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["type"] == "file_change"),
        "completed items are stored"
    );
    assert_eq!(view["turns"][0]["status"], "failed");
}

#[test]
fn missing_script_file_is_one_clear_line() {
    let s = Scratch::new();
    let out = s.run(&["exec", "--model", "scripted:/no/such/script.json", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/no/such/script.json"), "{err}");
}

#[test]
fn the_shipped_demo_script_runs() {
    let s = Scratch::new();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.json");
    let out = s.run(&[
        "exec",
        "--model",
        &format!("scripted:{demo}"),
        "write a greeting script",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(read(&s.workspace().join("greet.sh")).contains("Greetings from Gantry"));
    assert!(stdout(&out).contains("Hello, world! Greetings from Gantry."));
}

#[test]
fn commands_run_in_the_workspace_write_sandbox_unless_told_otherwise() {
    let s = Scratch::new();
    let outside = gantry_testkit::process::dir_outside_temp().unwrap();
    let target = outside.path().join("escaped");
    let steps = |file: &std::path::Path| {
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": format!("touch {} && echo inside > in.txt", file.display())}}]}},
            {"reply": {"text": "done"}}
        ]})
    };
    let model = s.script("s.json", steps(&target));
    let out = s.run(&["exec", "--json", "--model", &model, "escape"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !target.exists(),
        "the default sandbox blocks writes outside the workspace"
    );
    let lines = json_lines(&out);
    let command = lines
        .iter()
        .find(|l| {
            l["payload"]["type"] == "item_completed"
                && l["payload"]["item"]["type"] == "command_execution"
        })
        .unwrap();
    assert!(
        command["payload"]["item"]["output"]
            .as_str()
            .unwrap()
            .contains("Permission denied")
    );

    let model = s.script("s2.json", steps(&target));
    let out = s.run(&[
        "exec",
        "--sandbox",
        "danger-full-access",
        "--model",
        &model,
        "escape",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(target.exists(), "no sandbox when the user opts out");
}
