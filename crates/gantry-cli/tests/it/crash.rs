//! kill -9 in the middle of a turn, then start again.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::*;
use serde_json::{Value, json};

/// A `sleep` with a marker argument that no other process has.
const MARKER: &str = "61.4242";

#[test]
fn a_killed_process_leaves_a_readable_thread_with_the_turn_interrupted() {
    let s = Scratch::new();
    let model = s.script(
        "crash.json",
        json!({"steps": [
            {"reply": {"text": "Writing first.", "tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt", "content": "done"}}]}},
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": format!("echo ready; sleep {MARKER}")}}]}},
            {"reply": {"text": "never reached"}}
        ]}),
    );
    let mut child = s
        .gantry()
        .args(["exec", "--json", "--model", &model, "work"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut thread = None;
    for line in BufReader::new(stdout).lines() {
        let line: Value = serde_json::from_str(&line.expect("line")).expect("json");
        thread.get_or_insert_with(|| line["thread_id"].as_str().unwrap().to_owned());
        if line["type"] == "command.output"
            && line["text"].as_str().is_some_and(|t| t.contains("ready"))
        {
            break;
        }
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    kill_orphans();
    let thread = thread.expect("thread id");

    let show = s.run(&["threads", "show", &thread, "--json"]);
    assert!(show.status.success(), "{}", stderr(&show));
    let view: Value = serde_json::from_slice(&show.stdout).unwrap();
    let turn = &view["turns"][0];
    assert_eq!(turn["status"], "interrupted");
    let items = turn["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    // Everything before the kill is there: tools run only once the log
    // holds their start (write-ahead), so the killed command is there too,
    // closed as interrupted.
    assert_eq!(
        kinds,
        [
            "user_message",
            "agent_message",
            "file_change",
            "command_execution",
            "error"
        ]
    );
    assert!(items[..3].iter().all(|i| i["status"] == "completed"));
    assert_eq!(items[3]["status"], "interrupted");
    assert!(items[4]["message"].as_str().unwrap().contains("restart"));
    assert_eq!(view["thread"]["status"], "idle");
}

/// The killed gantry could not kill its command; do it here.
fn kill_orphans() {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(MARKER) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
