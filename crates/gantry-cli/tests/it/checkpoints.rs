//! `gantry threads checkpoints|rewind|fork` with the real binary: a turn of
//! `gantry exec` changes files, and the checkpoint brings them back.

use crate::common;

use common::*;
use serde_json::{Value, json};

#[test]
fn a_rewind_restores_what_an_exec_turn_changed_and_refuses_over_a_users_edit() {
    let s = Scratch::new();
    let ws = s.workspace();
    std::fs::write(ws.join("keep.txt"), "before\n").expect("file");
    std::fs::write(ws.join("gone.txt"), "doomed\n").expect("file");
    let model = s.script(
        "turn.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command":
                "echo after > keep.txt && rm gone.txt && echo new > made.txt"}}]}},
            {"reply": {"text": "Changed."}}
        ]}),
    );
    let out = s.run(&["exec", "--json", "--model", &model, "change things"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let thread = json_lines(&out)[0]["thread_id"]
        .as_str()
        .expect("thread id")
        .to_owned();

    let listed = s.run(&["threads", "checkpoints", &thread, "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let checkpoint = listed["checkpoints"][0]["id"]
        .as_str()
        .expect("a checkpoint")
        .to_owned();

    std::fs::write(ws.join("mine.md"), "the user's").expect("user's file");
    let refused = s.run(&["threads", "rewind", &thread, &checkpoint]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("mine.md"), "{}", stderr(&refused));
    assert_eq!(read(&ws.join("keep.txt")), "after\n");

    let rewound = s.run(&["threads", "rewind", &thread, &checkpoint, "--force"]);
    assert!(rewound.status.success(), "{}", stderr(&rewound));
    assert_eq!(read(&ws.join("keep.txt")), "before\n");
    assert_eq!(read(&ws.join("gone.txt")), "doomed\n");
    assert!(!ws.join("made.txt").exists());

    let fork = s.run(&["threads", "fork", &thread, &checkpoint]);
    assert!(fork.status.success(), "{}", stderr(&fork));
    let fork_dir = std::fs::read_dir(s.dir.path())
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("ws-fork-"))
        .expect("the fork's directory beside the workspace");
    assert_eq!(read(&fork_dir.join("keep.txt")), "before\n");
}

#[test]
fn a_rewind_killed_part_way_is_finished_at_the_next_start() {
    const FILES: usize = 3000;
    let s = Scratch::new();
    let ws = s.workspace();
    for i in 1..=FILES {
        std::fs::write(ws.join(format!("f{i}.txt")), "a\n").expect("file");
    }
    let model = s.script(
        "turn.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command":
                format!("for i in $(seq 1 {FILES}); do echo b > f$i.txt; done; echo new > extra.txt")}}]}},
            {"reply": {"text": "Changed them all."}}
        ]}),
    );
    let out = s.run(&["exec", "--json", "--model", &model, "change every file"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let thread = json_lines(&out)[0]["thread_id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let listed = s.run(&["threads", "checkpoints", &thread, "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let checkpoint = listed["checkpoints"][0]["id"]
        .as_str()
        .expect("a checkpoint")
        .to_owned();

    // Killed (-9) once the rewind has said it started: files part written.
    let note = s.dir.path().join(format!(
        "data/checkpoints/{thread}.git/gantry-restore-pending"
    ));
    let mut child = s
        .gantry()
        .args(["threads", "rewind", &thread, &checkpoint])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("rewind");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !note.exists() && child.try_wait().expect("wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the rewind never started"
        );
        std::thread::yield_now();
    }
    child.kill().expect("kill -9");
    child.wait().expect("reaped");
    assert!(note.exists(), "killed part way, its note left behind");

    // The next start finishes it: every file as at the checkpoint.
    let after = s.run(&["threads", "checkpoints", &thread]);
    assert!(after.status.success(), "{}", stderr(&after));
    assert!(!note.exists(), "the rewind is finished");
    for i in 1..=FILES {
        assert_eq!(read(&ws.join(format!("f{i}.txt"))), "a\n", "f{i}.txt");
    }
    assert!(!ws.join("extra.txt").exists());
}
