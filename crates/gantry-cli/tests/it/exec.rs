//! `gantry exec` end to end: the real binary, the scripted model over HTTP,
//! real tools in a temp workspace, a real SQLite store.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

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
    assert_eq!(lines[0]["type"], "thread.started");
    let events: Vec<&Value> = lines.iter().filter(|l| l.get("seq").is_some()).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");

    let completed: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| e["item"]["type"].as_str().unwrap())
        .collect();
    let mut expected = vec!["user_message"];
    for _ in 0..5 {
        expected.extend(["agent_message", "command_execution", "file_change"]);
    }
    expected.push("agent_message");
    assert_eq!(completed, expected);

    let command = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap();
    assert_eq!(command["item"]["exit_code"], 0);
    assert_eq!(command["item"]["aggregated_output"], "value = 1\n");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["rounds"], 11);
    assert!(
        lines.iter().any(|l| l["type"] == "item.delta"),
        "deltas are streamed too"
    );
}

/// One turn with reasoning, a command, a new file and a streamed final
/// answer, with fixed token counts.
fn command_edit_answer() -> Value {
    let usage = |p: u64, c: u64| json!({"prompt_tokens": p, "completion_tokens": c});
    json!({"steps": [
        {"reply": {"reasoning": "List first.", "text": "Looking.", "usage": usage(100, 10),
                   "tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}},
        {"reply": {"usage": usage(120, 20), "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.txt", "content": "one\ntwo\n"}}
        ]}},
        {"reply": {"text": "Wrote notes.txt.", "chunk_size": 6, "usage": usage(140, 5)}}
    ]})
}

/// The `--json` lines with what changes from run to run replaced: the
/// thread's id by `<thread>`, the turn's by `<turn>`, item ids by `<item N>`
/// (numbered in order of first appearance), the workspace by `<ws>`, a
/// command's wall time by 0.
fn normalized(out: &Output, workspace: &Path) -> Vec<Value> {
    let ws = workspace.canonicalize().unwrap().display().to_string();
    let mut items: HashMap<String, String> = HashMap::new();
    let mut item_name = |id: &Value| {
        let n = items.len() + 1;
        let id = id.as_str().expect("an item id is a string").to_owned();
        Value::from(
            items
                .entry(id)
                .or_insert_with(|| format!("<item {n}>"))
                .clone(),
        )
    };
    let mut lines = json_lines(out);
    for l in &mut lines {
        if l.get("thread_id").is_some() {
            l["thread_id"] = "<thread>".into();
        }
        if l.get("turn_id").is_some() {
            l["turn_id"] = "<turn>".into();
        }
        if let Some(id) = l.get("item_id") {
            l["item_id"] = item_name(id);
        }
        if let Some(item) = l.get_mut("item") {
            item["id"] = item_name(&item["id"]);
            if item.get("cwd").is_some_and(|c| *c == ws.as_str()) {
                item["cwd"] = "<ws>".into();
            }
            if item.get("duration_ms").is_some_and(Value::is_u64) {
                item["duration_ms"] = 0.into();
            }
        }
    }
    lines
}

#[test]
fn json_lines_are_the_documented_types_golden() {
    let s = Scratch::new();
    let model = s.script("golden.json", command_edit_answer());
    let out = s.run(&["exec", "--json", "--model", &model, "make notes"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    // Each line is one object that names its type first.
    for line in stdout(&out).lines() {
        assert!(line.starts_with(r#"{"type":""#), "{line}");
    }
    let diff = "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n";
    let usage = json!({"input_tokens": 360, "cached_input_tokens": 0, "cache_write_tokens": 0,
                       "output_tokens": 35, "reasoning_tokens": 0});
    let expected = vec![
        json!({"type": "thread.started", "thread_id": "<thread>", "resumed": false}),
        json!({"type": "turn.started", "seq": 2, "turn_id": "<turn>"}),
        json!({"type": "item.started", "seq": 3, "item": {"id": "<item 1>", "type": "user_message", "text": "make notes", "status": "in_progress"}}),
        json!({"type": "item.completed", "seq": 4, "item": {"id": "<item 1>", "type": "user_message", "text": "make notes", "status": "completed"}}),
        json!({"type": "item.started", "seq": 5, "item": {"id": "<item 2>", "type": "reasoning", "text": "", "status": "in_progress"}}),
        json!({"type": "item.delta", "item_id": "<item 2>", "text": "List first."}),
        // Reasoning and text stream side by side; the round closes both.
        json!({"type": "item.started", "seq": 6, "item": {"id": "<item 3>", "type": "agent_message", "text": "", "status": "in_progress"}}),
        json!({"type": "item.delta", "item_id": "<item 3>", "text": "Looking."}),
        json!({"type": "item.completed", "seq": 7, "item": {"id": "<item 2>", "type": "reasoning", "text": "List first.", "status": "completed"}}),
        json!({"type": "item.completed", "seq": 8, "item": {"id": "<item 3>", "type": "agent_message", "text": "Looking.", "status": "completed"}}),
        // Seqs left out are events `exec` prints no line for: the turn's
        // checkpoint (9, before its first command), the command's pid and
        // each model response's usage.
        json!({"type": "item.started", "seq": 10, "item": {"id": "<item 4>", "type": "command_execution", "command": "echo hi", "cwd": "<ws>",
               "aggregated_output": "", "exit_code": null, "duration_ms": null, "error": null, "status": "in_progress"}}),
        json!({"type": "command.output", "item_id": "<item 4>", "text": "hi\n"}),
        json!({"type": "item.completed", "seq": 13, "item": {"id": "<item 4>", "type": "command_execution", "command": "echo hi", "cwd": "<ws>",
               "aggregated_output": "hi\n", "exit_code": 0, "duration_ms": 0, "error": null, "status": "completed"}}),
        json!({"type": "item.started", "seq": 15, "item": {"id": "<item 5>", "type": "file_change", "path": "notes.txt", "change": null,
               "diff": "", "lines_added": 0, "lines_removed": 0, "error": null, "status": "in_progress"}}),
        json!({"type": "item.completed", "seq": 16, "item": {"id": "<item 5>", "type": "file_change", "path": "notes.txt", "change": "add",
               "diff": diff, "lines_added": 2, "lines_removed": 0, "error": null, "status": "completed"}}),
        json!({"type": "item.started", "seq": 17, "item": {"id": "<item 6>", "type": "agent_message", "text": "", "status": "in_progress"}}),
        json!({"type": "item.delta", "item_id": "<item 6>", "text": "Wrote "}),
        json!({"type": "item.delta", "item_id": "<item 6>", "text": "notes."}),
        json!({"type": "item.delta", "item_id": "<item 6>", "text": "txt."}),
        json!({"type": "item.completed", "seq": 18, "item": {"id": "<item 6>", "type": "agent_message", "text": "Wrote notes.txt.", "status": "completed"}}),
        json!({"type": "turn.completed", "seq": 20, "turn_id": "<turn>", "status": "completed", "rounds": 3,
               "usage": usage, "cost_usd": null, "reason": null}),
    ];
    let got = normalized(&out, &s.workspace());
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "line {i}");
    }
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    assert_eq!(read(&s.workspace().join("notes.txt")), "one\ntwo\n");
}

#[test]
fn a_failed_turn_prints_turn_failed_and_exits_1() {
    let s = Scratch::new();
    let model = s.script("fail.json", json!({"steps": [{"error": {"status": 401}}]}));
    let out = s.run(&["exec", "--json", "--model", &model, "go"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = json_lines(&out);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "turn.failed", "{lines:#?}");
    assert_eq!(last["turn_id"], lines[1]["turn_id"]);
    assert!(last["seq"].is_u64());
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("authentication failed (HTTP 401)"),
        "{last}"
    );
    assert_eq!(last["error"]["kind"], "model_unusable");
    assert!(lines.iter().all(|l| l["type"] != "turn.completed"));
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
    let started = &json_lines(&out)[0];
    assert_eq!(started["type"], "thread.started");
    assert_eq!(started["resumed"], false);
    let thread = started["thread_id"].as_str().unwrap().to_owned();

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
        .find(|l| l["type"] == "item.completed" && l["item"]["type"] == "error")
        .expect("error item");
    assert!(
        error["item"]["message"]
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
    assert_eq!(
        err.matches("No such file").count(),
        1,
        "the cause once: {err}"
    );
}

#[test]
fn a_store_that_cannot_be_made_ends_the_run_saying_so() {
    let s = Scratch::new();
    let model = s.script("a.json", json!({"steps": [{"reply": {"text": "hi"}}]}));
    // Its directory would be under a file: the store is made in the
    // background, and its failure still ends the run.
    let file = s.workspace().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let store = format!("sqlite://{}", file.join("gantry.db").display());
    let out = s.run(&["exec", "--store", &store, "--model", &model, "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("gantry: error: cannot open the store") && last.contains("not-a-dir"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
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
        .find(|l| l["type"] == "item.completed" && l["item"]["type"] == "command_execution")
        .unwrap();
    assert!(
        command["item"]["aggregated_output"]
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

/// A home whose login profile (`.bash_profile` sourcing `.bashrc`, as
/// Debian's `.profile` does) counts its runs and defines a function.
fn home_with_counting_profile(s: &Scratch) -> std::path::PathBuf {
    let home = s.dir.path().join("home");
    std::fs::write(home.join(".bash_profile"), ". \"$HOME/.bashrc\"\n").unwrap();
    std::fs::write(
        home.join(".bashrc"),
        "echo ran >> \"$HOME/runs\"\nproject() { echo \"project of $USER_NAME\"; }\nexport USER_NAME=ada\n",
    )
    .unwrap();
    home
}

fn three_commands_using_the_profile() -> Value {
    let call =
        json!({"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "project"}}]}});
    json!({"steps": [call, call, call, {"reply": {"text": "done"}}]})
}

#[test]
fn the_login_profile_runs_once_for_a_turn_of_commands_unless_snapshots_are_off() {
    let s = Scratch::new();
    let home = home_with_counting_profile(&s);
    let runs = || read(&home.join("runs")).lines().count();

    // Unsandboxed, so that the profile can count its runs: for sandboxed
    // commands it runs read-only (gantry-tools' sandbox_namespaces tests).
    let model = s.script("p.json", three_commands_using_the_profile());
    let out = s.run(&[
        "exec",
        "--json",
        "--sandbox",
        "danger-full-access",
        "--model",
        &model,
        "use the profile",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let outputs: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|l| l["type"] == "item.completed" && l["item"]["type"] == "command_execution")
        .map(|l| l["item"]["aggregated_output"].clone())
        .collect();
    assert_eq!(outputs, vec![json!("project of ada\n"); 3]);
    assert_eq!(runs(), 1, "one snapshot for three commands");

    let model = s.script("p2.json", three_commands_using_the_profile());
    let out = s.run(&[
        "exec",
        "--no-shell-snapshot",
        "--sandbox",
        "danger-full-access",
        "--model",
        &model,
        "again",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        runs(),
        1 + 3,
        "--no-shell-snapshot runs the profile per command"
    );
}

#[test]
fn json_logs_carry_the_turns_thread_and_trace_ids() {
    let s = Scratch::new();
    // A 503 first: the retry is logged (a warning) from inside the turn.
    let model = s.script(
        "retry.json",
        json!({"steps": [{"error": {"status": 503}}, {"reply": {"text": "done"}}]}),
    );
    let out = s.run(&[
        "--log-format",
        "json",
        "exec",
        "--json",
        "--model",
        &model,
        "go",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let thread = lines[0]["thread_id"].as_str().expect("a thread id");
    let turn = lines
        .iter()
        .find_map(|l| l["turn_id"].as_str())
        .expect("turn.started");
    let logs: Vec<Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let retry = logs
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.contains("retrying"))
        })
        .unwrap_or_else(|| panic!("the retry is logged: {logs:?}"));
    assert_eq!(retry["level"], "WARN");
    assert!(retry["timestamp"].is_string(), "{retry}");
    let span = &retry["span"];
    assert_eq!(span["thread_id"], thread, "{retry}");
    assert_eq!(span["turn_id"], turn);
    // No caller's trace: the turn's own, named by its id.
    let hex = turn.replace('-', "");
    assert_eq!(span["trace_id"], hex.as_str());
    assert_eq!(span["span_id"], &hex[16..]);
}
