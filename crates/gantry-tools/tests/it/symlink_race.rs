//! The file tools against a symlink race: another process (the agent's own
//! shell, say) swaps a workspace path between a regular entry and a symlink
//! leading out of the workspace while the tools check and open it. The
//! tools run outside the sandbox, so nothing outside may ever be touched.

use crate::common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use common::{call, canon, result_text};
use gantry_tools::{EditFileTool, GrepTool, ReadFileTool, ToolStatus, WriteFileTool};
use serde_json::json;

/// Tool calls made per race at least; the swapper runs until they are done.
const CALLS: usize = 2000;
/// Swaps the swapper must have made before the calls stop (so a starved
/// swapper cannot make the test vacuous); counted, not timed.
const MIN_SWAPS: u64 = 500;
/// Calls made at most, should the swapper lag behind that badly.
const MAX_CALLS: usize = 50 * CALLS;

/// What the outside target holds; it must still hold it at the end.
const OUTSIDE: &str = "outside marker: untouched\n";
/// What the inside file holds; shares `marker` with [`OUTSIDE`] so an edit
/// through the symlink would find its `old_string` and write.
const INSIDE: &str = "inside marker\n";

/// The swapper thread and what the calls loop watches of it.
struct Swapper {
    handle: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
}

impl Swapper {
    /// Whether the calls may stop after `calls` calls.
    fn enough(&self, calls: usize) -> bool {
        calls >= MAX_CALLS || (calls >= CALLS && self.swaps.load(Ordering::Relaxed) >= MIN_SWAPS)
    }

    /// Stops the thread; returns the swaps it made.
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("swapper thread");
        self.swaps.load(Ordering::Relaxed)
    }
}

/// Swaps `link` between `regular()` and a symlink to `target`, each swap
/// an atomic rename (so the name never disappears), until stopped.
fn swapper(link: PathBuf, target: PathBuf, regular: fn(&Path)) -> Swapper {
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let (stop2, swaps2) = (stop.clone(), swaps.clone());
    let handle = std::thread::spawn(move || {
        let (stop, swaps) = (stop2, swaps2);
        let dir = link.parent().expect("link has a parent").to_path_buf();
        let staged_regular = dir.join(".staged-regular");
        let staged_link = dir.join(".staged-link");
        while !stop.load(Ordering::Relaxed) {
            // Errors are expected (the tools replace `link` under us too).
            let _ = fs::remove_file(&staged_regular);
            let _ = fs::remove_dir_all(&staged_regular);
            regular(&staged_regular);
            // rename(2) of a directory over a symlink fails; drop the link first.
            if fs::symlink_metadata(&staged_regular).is_ok_and(|m| m.is_dir()) {
                let _ = fs::remove_file(&link);
            }
            let _ = fs::rename(&staged_regular, &link);
            let _ = fs::remove_file(&staged_link);
            let _ = symlink(&target, &staged_link);
            // rename(2) over a non-empty directory fails; clear it first.
            if fs::symlink_metadata(&link).is_ok_and(|m| m.is_dir()) {
                let _ = fs::remove_dir_all(&link);
            }
            let _ = fs::rename(&staged_link, &link);
            swaps.fetch_add(1, Ordering::Relaxed);
        }
    });
    Swapper {
        handle,
        stop,
        swaps,
    }
}

fn regular_file(p: &Path) {
    let _ = fs::write(p, INSIDE);
}

fn regular_dir(p: &Path) {
    let _ = fs::create_dir(p);
}

struct Race {
    ws: tempfile::TempDir,
    _outside: tempfile::TempDir,
    target: PathBuf,
}

fn race_setup() -> Race {
    let ws = tempfile::tempdir().expect("workspace");
    let outside = tempfile::tempdir().expect("outside dir");
    let target = canon(outside.path()).join("target.txt");
    fs::write(&target, OUTSIDE).expect("outside target");
    Race {
        ws,
        _outside: outside,
        target,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_and_edit_never_follow_a_swapped_in_symlink_out() {
    let r = race_setup();
    let ws = r.ws.path().to_path_buf();
    let swap = swapper(canon(&ws).join("race"), r.target.clone(), regular_file);
    let mut ok = 0usize;
    let mut calls = 0usize;
    while !swap.enough(calls) {
        calls += 1;
        let out = if calls.is_multiple_of(2) {
            call(
                &WriteFileTool,
                &ws,
                json!({"path": "race", "content": "pwned by write_file\n"}),
            )
            .await
        } else {
            call(
                &EditFileTool,
                &ws,
                json!({"path": "race", "old_string": "marker", "new_string": "pwned by edit_file"}),
            )
            .await
        };
        if out.status == ToolStatus::Ok {
            ok += 1;
        }
    }
    let swaps = swap.finish();
    assert_eq!(
        fs::read_to_string(&r.target).expect("target readable"),
        OUTSIDE,
        "the outside file was written through the symlink ({ok} of {calls} calls succeeded, {swaps} swaps)"
    );
    // Some calls found `race` a regular file: the race was really run.
    assert!(ok > 0, "no call succeeded in {calls} calls ({swaps} swaps)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_never_creates_files_through_a_swapped_in_directory_symlink() {
    let r = race_setup();
    let ws = r.ws.path().to_path_buf();
    let outside_dir = r.target.parent().expect("target dir").to_path_buf();
    let swap = swapper(canon(&ws).join("racedir"), outside_dir.clone(), regular_dir);
    let mut calls = 0usize;
    while !swap.enough(calls) {
        calls += 1;
        let _ = call(
            &WriteFileTool,
            &ws,
            json!({"path": "racedir/new.txt", "content": "pwned\n"}),
        )
        .await;
    }
    let swaps = swap.finish();
    assert!(
        !outside_dir.join("new.txt").exists(),
        "write_file created a file outside the workspace through a directory symlink \
         ({calls} calls, {swaps} swaps)"
    );
    let leftovers: Vec<_> = fs::read_dir(&outside_dir)
        .expect("outside dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("target.txt")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_never_follows_a_swapped_in_symlink_out() {
    let r = race_setup();
    let ws = r.ws.path().to_path_buf();
    let swap = swapper(canon(&ws).join("race"), r.target.clone(), regular_file);
    let mut leaked = 0usize;
    let mut calls = 0usize;
    while !swap.enough(calls) {
        calls += 1;
        let out = call(&ReadFileTool, &ws, json!({"path": "race"})).await;
        if out.status == ToolStatus::Ok && result_text(&out).contains("untouched") {
            leaked += 1;
        }
    }
    let swaps = swap.finish();
    assert_eq!(
        leaked, 0,
        "read_file returned the outside file's content {leaked} times ({calls} calls, {swaps} swaps)"
    );
}

/// The race made deterministic: the path is checked while it is a plain
/// file or directory, then swapped for a symlink leading out before the I/O.
#[test]
fn a_checked_path_swapped_for_an_escaping_symlink_is_refused() {
    use gantry_tools::workspace_path::{is_escape, resolve};
    let r = race_setup();
    let w = canon(r.ws.path());
    let outside_dir = r.target.parent().expect("target dir").to_path_buf();

    fs::write(w.join("f"), INSIDE).expect("inside file");
    let f = resolve(&w, "f").expect("f is inside");
    fs::remove_file(w.join("f")).expect("rm");
    symlink(&r.target, w.join("f")).expect("symlink");
    let e = f
        .open_read()
        .expect_err("read through the swapped-in symlink");
    assert!(is_escape(&e), "{e}");
    assert!(e.to_string().contains("outside the workspace"), "{e}");
    // Writing replaces the symlink itself; its target is never opened.
    f.write_atomic(b"replaced\n")
        .expect("write replaces the link");
    assert!(fs::symlink_metadata(w.join("f")).expect("f").is_file());
    assert_eq!(fs::read_to_string(w.join("f")).expect("f"), "replaced\n");

    fs::create_dir(w.join("d")).expect("inside dir");
    let new = resolve(&w, "d/sub/new.txt").expect("inside");
    fs::remove_dir(w.join("d")).expect("rmdir");
    symlink(&outside_dir, w.join("d")).expect("symlink");
    let e = new.create_parents().expect_err("mkdir through the symlink");
    assert!(is_escape(&e), "{e}");
    let e = new
        .write_atomic(b"x")
        .expect_err("write through the symlink");
    assert!(is_escape(&e), "{e}");
    let e = new.open_read().expect_err("read through the symlink");
    assert!(is_escape(&e), "{e}");

    assert_eq!(fs::read_to_string(&r.target).expect("target"), OUTSIDE);
    let names: Vec<_> = fs::read_dir(&outside_dir)
        .expect("outside dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("target.txt")]);
}

/// Files per directory in the grep race: more files, more opens that can
/// land while the directory is swapped.
const GREP_FILES: usize = 16;

fn regular_dir_with_files(p: &Path) {
    let _ = fs::create_dir(p);
    for i in 0..GREP_FILES {
        let _ = fs::write(p.join(format!("x{i}.txt")), "needle inside\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_never_reads_through_a_swapped_in_directory_symlink() {
    let r = race_setup();
    let ws = r.ws.path().to_path_buf();
    let outside_dir = r.target.parent().expect("target dir").to_path_buf();
    for i in 0..GREP_FILES {
        fs::write(outside_dir.join(format!("x{i}.txt")), "needle outside\n").expect("outside file");
    }
    let swap = swapper(
        canon(&ws).join("d"),
        outside_dir.clone(),
        regular_dir_with_files,
    );
    let mut leaked = 0usize;
    let mut calls = 0usize;
    while !swap.enough(calls) {
        calls += 1;
        let out = call(&GrepTool, &ws, json!({"pattern": "needle"})).await;
        if out.model_output.contains("needle outside") {
            leaked += 1;
        }
    }
    let swaps = swap.finish();
    assert_eq!(
        leaked, 0,
        "grep returned the outside file's content {leaked} times ({calls} calls, {swaps} swaps)"
    );
}
