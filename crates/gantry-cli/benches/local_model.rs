//! A real model's stream, read directly and through a Gantry turn: the
//! runtime's overhead on a real stream. llama-cpp-python's server with
//! SmolLM2-135M-Instruct (`gantry_testkit::local_model`); directly, a
//! streamed Chat Completions request read chunk by chunk; through Gantry, a
//! whole `gantry exec --json` process whose `item.delta` lines are read.
//! Both count text deltas (one token each from this server) from the first
//! to the last, so the model's own start-up (prompt processing) is left out
//! of both alike.
//!
//! Run: `cargo bench -p gantry-cli --bench local_model` (`BENCH_RUNS=N`,
//! 5 by default; skipped when the server is not installed).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

use gantry_testkit::local_model::{LocalModel, MODEL};
use serde_json::{Value, json};

const PROMPT: &str = "Count from 1 to 100, one number per line.";
const MAX_TOKENS: u32 = 200;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let Some(server) = LocalModel::start() else {
        eprintln!("local_model bench skipped: no local server");
        return;
    };
    let scratch = tempfile::tempdir().expect("tempdir");
    let home = scratch.path().join("home");
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    let (mut direct, mut through) = (Vec::new(), Vec::new());
    // One warm-up of each: the model's weights paged in, the data dir made.
    for run in 0..=runs {
        let d = direct_rate(&server);
        let g = gantry_rate(&server, &home, &ws, scratch.path());
        if run > 0 {
            eprintln!(
                "run {run}: direct {:.1} tok/s, through gantry {:.1} tok/s",
                d.0, g.0
            );
            direct.push(d);
            through.push(g);
        }
    }
    let (d, g) = (median(&direct), median(&through));
    println!(
        "direct: median {:.1} tok/s ({} deltas); through a gantry exec turn: median {:.1} tok/s ({} deltas); {:+.1}%",
        d.0,
        d.1,
        g.0,
        g.1,
        (g.0 / d.0 - 1.0) * 100.0
    );
}

/// Deltas per second from the first to the last, and how many there were.
type Rate = (f64, usize);

fn rate(first: Option<Instant>, last: Option<Instant>, count: usize) -> Rate {
    match (first, last) {
        (Some(first), Some(last)) if count > 1 => {
            ((count - 1) as f64 / (last - first).as_secs_f64(), count)
        }
        _ => (0.0, count),
    }
}

fn direct_rate(server: &LocalModel) -> Rate {
    let body = json!({
        "model": MODEL,
        "stream": true,
        "max_tokens": MAX_TOKENS,
        "messages": [{"role": "user", "content": PROMPT}],
    });
    let mut curl = Command::new("curl")
        .args(["-sN", "-H", "content-type: application/json", "-d"])
        .arg(body.to_string())
        .arg(format!("{}/chat/completions", server.base_url()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl");
    let (mut first, mut last, mut count) = (None, None, 0);
    for line in BufReader::new(curl.stdout.take().expect("stdout")).lines() {
        let line = line.expect("read");
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if chunk["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
        {
            let now = Instant::now();
            first.get_or_insert(now);
            last = Some(now);
            count += 1;
        }
    }
    let _ = curl.wait();
    rate(first, last, count)
}

fn gantry_rate(
    server: &LocalModel,
    home: &std::path::Path,
    ws: &std::path::Path,
    scratch: &std::path::Path,
) -> Rate {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.base_url(),
            "--model",
            MODEL,
        ])
        .args(["--max-rounds", "1", PROMPT])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GANTRY_DATA_DIR", scratch.join("data"))
        .env("GANTRY_ALLOW_EXPOSED_DATA_DIR", "true")
        .current_dir(ws)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run gantry exec");
    let (mut first, mut last, mut count) = (None, None, 0);
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.expect("read");
        if line.starts_with(r#"{"type":"item.delta""#) {
            let now = Instant::now();
            first.get_or_insert(now);
            last = Some(now);
            count += 1;
        }
    }
    let _ = child.wait();
    rate(first, last, count)
}

fn median(rates: &[Rate]) -> Rate {
    let mut sorted = rates.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    sorted[sorted.len() / 2]
}
