//! The dashboard's first paint of a long thread: a real `gantry serve
//! --http-addr` process (SQLite file store) holds a thread of about 5,000
//! events (one turn of rounds of `list_dir` calls, each call an item
//! started and completed); headless chromium (`gantry_testkit::browser`,
//! over WebDriver) opens the thread's page, and the time from navigation
//! until its last item is in the page is measured, several times.
//! Skipped, saying why, when chromium or chromedriver is missing.
//!
//! Run: `cargo bench -p gantry-cli --bench dashboard_paint`
//! (`BENCH_EVENTS=N`, 5000 by default; `BENCH_RUNS=N`, 5 by default).

use std::time::{Duration, Instant};

use gantry_testkit::browser::Browser;
use gantry_testkit::{MockLlm, Script, Step, ToolCallSpec};
use serde_json::{Value, json};

#[path = "support/serve.rs"]
mod http_serve;
use http_serve::serve;

/// Tool calls the model asks for at once.
const CALLS_PER_ROUND: usize = 250;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A script whose one turn writes about `events` events: rounds of
/// `list_dir` calls (two events each), then an answer.
fn script(events: usize) -> Script {
    let calls = events / 2;
    let mut steps = Vec::new();
    let mut left = calls;
    let mut n = 0;
    while left > 0 {
        let round = left.min(CALLS_PER_ROUND);
        let specs = (0..round)
            .map(|_| {
                n += 1;
                ToolCallSpec::new("list_dir", json!({"path": "."})).with_id(format!("call-{n}"))
            })
            .collect();
        steps.push(Step::tool_calls(specs));
        left -= round;
    }
    steps.push(Step::text("Listed it all."));
    Script::new(steps)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    if !Browser::available() {
        println!(
            "dashboard_paint: skipped: no chromium or chromedriver (install Debian's chromium \
             and chromium-driver, or set GANTRY_TEST_CHROMIUM and GANTRY_TEST_CHROMEDRIVER)"
        );
        return;
    }
    // reqwest is built without a crypto provider (the server is plain HTTP).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let events = env_or("BENCH_EVENTS", 5_000);
    let runs = env_or("BENCH_RUNS", 5).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let scratch = tempfile::tempdir().expect("scratch");
        let llm = MockLlm::start(script(events)).expect("mock model");
        let (mut server, base) = serve(scratch.path(), &llm);
        let created: Value = http
            .post(format!("http://{base}/v1/threads"))
            .json(&json!({}))
            .send()
            .await
            .expect("create")
            .json()
            .await
            .expect("JSON");
        let thread = created["id"].as_str().expect("thread id").to_owned();
        let done: Value = http
            .post(format!(
                "http://{base}/v1/threads/{thread}/messages?wait=true"
            ))
            .json(&json!({"text": "list it, many times"}))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("JSON");
        assert_eq!(done["turn"]["status"], "completed", "{done}");
        let detail: Value = http
            .get(format!("http://{base}/v1/threads/{thread}"))
            .send()
            .await
            .expect("read")
            .json()
            .await
            .expect("JSON");
        let stored = detail["thread"]["last_seq"].as_u64().expect("last_seq");
        let items: Vec<&str> = detail["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .flat_map(|t| t["items"].as_array().into_iter().flatten())
            .filter_map(|i| i["id"].as_str())
            .collect();
        let last = items.last().expect("items");
        let browser = Browser::start().await;
        let painted = format!(
            "return document.querySelectorAll('#items .item').length >= {} \
             && document.getElementById('item-{last}') !== null",
            items.len()
        );
        let mut samples = Vec::new();
        for run in 0..runs {
            // A new URL each time: a whole page load, not a hash change.
            let page = format!("http://{base}/?run={run}#/t/{thread}");
            let start = Instant::now();
            browser.goto(&page).await;
            loop {
                if browser.script(&painted).await == Value::Bool(true) {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(300),
                    "the page never showed the thread's last item"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            eprintln!("dashboard_paint: run {}: {ms:.0} ms", samples.len() + 1);
            samples.push(ms);
        }
        println!(
            "dashboard first paint of a thread with {stored} events ({} items): median {:.0} ms \
             over {runs} runs (min {:.0} ms, max {:.0} ms)",
            items.len(),
            median(samples.clone()),
            samples.iter().copied().fold(f64::INFINITY, f64::min),
            samples.iter().copied().fold(0.0, f64::max),
        );
        drop(browser);
        let _ = server.kill();
        let _ = server.wait();
    });
}
