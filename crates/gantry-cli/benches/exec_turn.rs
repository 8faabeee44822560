//! Wall time and peak RSS of a whole `gantry exec` process running a 10-round
//! tool-calling turn (5 × shell + edit_file, then a final answer) against the
//! testkit server with zero delay.
//!
//! Run: `cargo bench -p gantry-cli --bench exec_turn` (`BENCH_RUNS=N` to change
//! the number of runs, 20 by default; `BENCH_GANTRY=PATH` to run another
//! `gantry` binary: the release build, say, since cargo builds benches'
//! `gantry` with `panic = "unwind"`, which `link/hot-text.txt` fits less well).
//!
//! Each run is made twice, back to back: untraced, and traced
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` at a sink in this process that answers
//! every export with 200), so tracing's cost is measured on the same load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Instant;

use gantry_testkit::{MockLlm, Script};
use nix::sys::resource::{UsageWho, getrusage};

/// The task, shared with `link/make-hot-text.py`: 5 × (shell + edit_file),
/// then an answer.
fn script() -> Script {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/exec_turn.json");
    Script::from_file(path).expect("benches/exec_turn.json")
}

/// An OTLP/HTTP receiver that reads each export and answers it, empty;
/// returns its URL.
fn otlp_sink() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the sink");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                // Requests on one connection, until the exporter closes it.
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if (&stream).write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let scratch = tempfile::tempdir().expect("tempdir");
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).expect("home");

    let gantry = std::env::var_os("BENCH_GANTRY").map_or_else(
        || env!("CARGO_BIN_EXE_gantry").into(),
        std::path::PathBuf::from,
    );
    let sink = otlp_sink();
    let mut walls = Vec::with_capacity(runs);
    let mut traced_walls = Vec::with_capacity(runs);
    // One warm-up run creates the database, as a user's first run does.
    for (run, traced) in (0..=runs).flat_map(|run| [(run, false), (run, true)]) {
        let llm = MockLlm::start(script()).expect("mock llm");
        let ws = scratch.path().join(format!("ws{run}-{traced}"));
        std::fs::create_dir_all(&ws).expect("workspace");
        let mut command = Command::new(&gantry);
        command
            .args([
                "exec",
                "--base-url",
                &llm.base_url(),
                "--model",
                "bench",
                "write the files",
            ])
            .arg("--cwd")
            .arg(&ws)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // A bare home keeps the machine's login profile out of `bash -lc`:
            // this measures Gantry, not ~/.bashrc.
            .env("HOME", &home)
            .env("GANTRY_DATA_DIR", scratch.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if traced {
            command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &sink);
        }
        let start = Instant::now();
        let status = command.status().expect("run gantry");
        let wall = start.elapsed();
        assert!(status.success(), "gantry exec failed: {status}");
        assert_eq!(llm.request_count(), 11, "all 11 model rounds ran");
        if run > 0 {
            let ms = wall.as_secs_f64() * 1000.0;
            if traced {
                traced_walls.push(ms);
            } else {
                walls.push(ms);
            }
        }
    }
    walls.sort_by(f64::total_cmp);
    traced_walls.sort_by(f64::total_cmp);
    let peak_kb = getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |u| u.max_rss());
    println!("gantry exec, 10 tool rounds + final answer, {runs} runs");
    println!(
        "  wall ms: median {:.1}  min {:.1}  max {:.1}",
        walls[walls.len() / 2],
        walls[0],
        walls[walls.len() - 1]
    );
    println!(
        "  traced (OTLP/HTTP to a local sink): median {:.1}  min {:.1}  max {:.1}",
        traced_walls[traced_walls.len() / 2],
        traced_walls[0],
        traced_walls[traced_walls.len() - 1]
    );
    println!("  peak RSS (either): {:.1} MB", peak_kb as f64 / 1024.0);
}
