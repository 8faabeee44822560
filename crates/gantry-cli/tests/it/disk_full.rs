//! `gantry exec` on a really full disk (a small tmpfs as the data dir):
//! it says why the log cannot be saved, Ctrl-C ends it at once with 130,
//! and every event it printed is in the store.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

/// A tmpfs mounted on `dir`, unmounted on drop; `None` where this process
/// may not mount (not root).
struct Mounted<'a>(&'a Path);

impl<'a> Mounted<'a> {
    fn tmpfs(dir: &'a Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).expect("mount point");
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success())
            .then_some(Self(dir))
    }
}

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0).status();
    }
}

/// Fills `dir`'s file system; returns the filler to delete to free it.
fn fill(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("filler");
    let block = vec![0u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    while file.write_all(&block[..512]).is_ok() {}
    path
}

/// Lines of a child's stream, as they come.
fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn with_the_disk_full_ctrl_c_exits_130_and_every_event_printed_is_stored() {
    let s = Scratch::new();
    let data = s.dir.path().join("data");
    let Some(_mounted) = Mounted::tmpfs(&data, "8m") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let gate = s.workspace().join("gate");
    assert!(
        Command::new("mkfifo")
            .arg(&gate)
            .status()
            .unwrap()
            .success()
    );
    let model = s.script(
        "gate.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "cat gate"}}]}},
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "touch second"}}]}},
            {"reply": {"text": "done"}}
        ]}),
    );
    let mut child = s
        .gantry()
        .args(["exec", "--json", "--model", &model, "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gantry exec");
    let out = lines(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    let mut printed: Vec<Value> = Vec::new();
    // The command is running (its start is stored, or it would not run).
    loop {
        let line = out
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the command starts");
        let line: Value = serde_json::from_str(&line).unwrap();
        let started_command =
            line["type"] == "item.started" && line["item"]["type"] == "command_execution";
        printed.push(line);
        if started_command {
            break;
        }
    }
    let filler = fill(&data);
    std::fs::write(&gate, "open\n").expect("release the command");
    let mut seen = Vec::new();
    let said = loop {
        let Ok(line) = err.recv_timeout(std::time::Duration::from_secs(20)) else {
            let out: Vec<String> = out.try_iter().collect();
            panic!("no store failure reported; stderr: {seen:#?}; stdout: {out:#?}");
        };
        if line.contains("cannot be saved") {
            break line;
        }
        seen.push(line);
    };
    assert!(said.contains("full"), "the real cause: {said}");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_briefly(&mut child).expect("gantry exits on Ctrl-C");
    assert_eq!(status.code(), Some(130));
    printed.extend(
        out.iter()
            .map(|l| serde_json::from_str::<Value>(&l).unwrap()),
    );
    assert!(
        !s.workspace().join("second").exists(),
        "no tool ran unlogged"
    );

    std::fs::remove_file(filler).unwrap();
    let stored = stored_events(&data.join("gantry.db"));
    // Lines from stored events carry their seq; their type names the event.
    let shown: Vec<(u64, String)> = printed
        .iter()
        .filter_map(|l| {
            let seq = l["seq"].as_u64()?;
            let kind = match l["type"].as_str().unwrap() {
                "turn.started" => "turn_started",
                "item.started" => "item_started",
                "item.completed" => "item_completed",
                "turn.completed" | "turn.failed" => "turn_completed",
                other => panic!("a line with a seq from no known event: {other}"),
            };
            Some((seq, kind.to_owned()))
        })
        .collect();
    assert!(!shown.is_empty());
    for event in &shown {
        assert!(
            stored.contains(event),
            "shown but not stored: {event:?}; stored: {stored:?}"
        );
    }
}

/// `(seq, kind)` of every stored event.
fn stored_events(db: &Path) -> Vec<(u64, String)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        let rows: Vec<(i64, String)> = sqlx::query_as("SELECT seq, kind FROM events")
            .fetch_all(&pool)
            .await
            .unwrap();
        rows.into_iter().map(|(s, k)| (s as u64, k)).collect()
    })
}

/// The child's exit status, or `None` (and the child killed) if it is still
/// running after 20 s: a hang fails the test instead of stalling the run.
fn wait_briefly(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}
