//! Gantry beside its peers: `gantry exec`, codex (`@openai/codex`) and
//! Claude Code (`@anthropic-ai/claude-code`) given the same scripted task,
//! ten shell commands each answered by the next model request, then a final
//! answer. Every agent talks to the scripted model server over real HTTP
//! (Chat Completions, Responses and Anthropic Messages respectively, all
//! without Nagle's algorithm) and runs in a fresh `HOME` and workspace with a
//! clean environment. Each run's side effects are checked (the ten files the
//! commands write) before its numbers count.
//!
//! Two variants: a bare `HOME`, and a `HOME` whose `~/.bashrc` takes 300 ms
//! and exports a variable (`~/.profile` sources it, as Debian's does), which
//! shows what a shell snapshot saves. Gantry also runs there with
//! `--no-shell-snapshot`.
//!
//! The peers are installed from npm on first use, at pinned versions, into a
//! cache dir (`GANTRY_PEERS_CACHE`, default `$CARGO_TARGET_TMPDIR/peers-cache`);
//! a peer that cannot be installed or started is skipped with the reason.
//! The agents' own binaries run, not npm's Node launchers.
//!
//! Run: `cargo bench -p gantry-cli --bench peers`. `BENCH_RUNS=N` (7 by
//! default) runs each agent N times after a warm-up run; `BENCH_PEERS=gantry,codex`
//! picks agents; `BENCH_VARIANTS=bare` or `bashrc` one variant;
//! `BENCH_GANTRY=PATH` runs another `gantry` binary in Gantry's place.

mod agents;
mod install;
mod run;
mod table;

use std::path::PathBuf;

use agents::{Agent, Variant};
use run::Sample;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7)
        .max(1);
    let picked = |var: &str, name: &str| {
        std::env::var(var)
            .map(|list| list.split(',').any(|p| p.trim() == name))
            .unwrap_or(true)
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("peers: cannot start a runtime: {e}");
            std::process::exit(1);
        }
    };
    let _guard = runtime.enter();
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peers-runs");
    let cache = std::env::var_os("GANTRY_PEERS_CACHE").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peers-cache"),
        PathBuf::from,
    );

    let mut agents = Vec::new();
    for agent in Agent::all() {
        if !picked("BENCH_PEERS", agent.peer_name()) {
            continue;
        }
        match agent.prepare(&cache) {
            Ok(ready) => agents.push(ready),
            Err(reason) => println!("skipping {}: {reason}", agent.label()),
        }
    }
    let floor = run::floor(&scratch, runs);
    println!(
        "floor: the same ten commands run one after another by bash with no agent: median {:.3} s",
        floor
    );
    for variant in [Variant::Bare, Variant::SlowBashrc] {
        if !picked("BENCH_VARIANTS", variant.name()) {
            continue;
        }
        let mut results: Vec<(String, Vec<Sample>)> = Vec::new();
        let mut failures = Vec::new();
        let mut lineup: Vec<(String, &agents::Ready, bool)> = Vec::new();
        for ready in &agents {
            lineup.push((ready.label(false), ready, false));
            if variant == Variant::SlowBashrc && ready.agent == Agent::Gantry {
                lineup.push((ready.label(true), ready, true));
            }
        }
        results.extend(
            lineup
                .iter()
                .map(|(label, _, _)| (label.clone(), Vec::new())),
        );
        // Interleaved, so machine noise falls on every agent alike; run 0 is
        // a warm-up (page cache, first-run files) and does not count.
        for n in 0..=runs {
            for (i, (label, ready, no_snapshot)) in lineup.iter().enumerate() {
                let dir = scratch.join(format!("{}-{}-{n}", variant.name(), i));
                match run::once(ready, variant, *no_snapshot, &dir) {
                    Ok(sample) if n > 0 => results[i].1.push(sample),
                    Ok(_) => {}
                    Err(e) => failures.push(format!("{label}, run {n}: {e}")),
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        println!();
        println!("{}", variant.title());
        println!();
        print!("{}", table::render(&results, runs));
        for failure in &failures {
            println!("FAILED (not counted): {failure}");
        }
    }
}
