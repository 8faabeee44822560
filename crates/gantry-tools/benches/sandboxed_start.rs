//! What a sandboxed command's own namespaces cost: the wall time of the
//! `shell` tool running `true` under `workspace-write`, with the thread's
//! private `/tmp`, the data dir protected, the workspace under the temp dir
//! (so it is mounted back), from the login profile's snapshot, as the
//! engine runs it.
//!
//! Run: `cargo bench -p gantry-tools --bench sandboxed_start` (`BENCH_RUNS=N`,
//! 300 by default). Run it again with `GANTRY_SANDBOX_NAMESPACES=off` for
//! the same commands without namespaces (Landlock and seccomp only).

use std::time::{Duration, Instant};

use gantry_tools::sandbox::NAMESPACES_VAR;
use gantry_tools::{SandboxPolicy, SandboxSupport, ShellTool, Tool, ToolContext};
use gantry_types::SandboxMode;
use serde_json::json;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(300);
    let support = SandboxSupport::probe();
    if let Some(problem) = support.problem {
        eprintln!("no sandbox here: {problem}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let scratch = tempfile::tempdir().expect("tempdir");
    let ws = scratch.path().join("ws");
    let data = scratch.path().join("data");
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::create_dir_all(&data).expect("data dir");
    let mut ctx = ToolContext::new(std::fs::canonicalize(&ws).expect("canonical"));
    ctx.sandbox = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &ctx.workspace);
    ctx.sandbox.protected = vec![data.clone()];
    ctx.sandbox.private_tmp = Some(data.join("tmp/thread"));
    // As the engine runs commands: from the login profile's snapshot (taken
    // by the first run), not `bash -l` each time.
    ctx.shell_snapshots = Some(std::sync::Arc::new(
        gantry_tools::ShellSnapshots::new(Some(&data.join("snapshots"))).expect("snapshots"),
    ));

    let mut times: Vec<Duration> = runtime.block_on(async {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs + 10 {
            let started = Instant::now();
            let out = ShellTool.run(json!({"command": "true"}), ctx.clone()).await;
            times.push(started.elapsed());
            assert!(
                out.model_output.starts_with("Exit code: 0"),
                "{}",
                out.model_output
            );
        }
        times.split_off(10) // the first ones warm the caches
    });
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let namespaces = match support.namespace_problem {
        None => "with namespaces".to_owned(),
        Some(why) => format!("without namespaces ({why})"),
    };
    println!(
        "sandboxed `true`, {namespaces}, {runs} runs: p50 {:.2} ms, p90 {:.2} ms \
         ({NAMESPACES_VAR}=off to compare)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
    );
}
