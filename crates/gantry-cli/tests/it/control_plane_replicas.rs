//! Control-plane replicas as real processes: two `gantry control-plane
//! serve --nats` sharing one store (a fresh PostgreSQL database) and the
//! machine's NATS with JetStream (`GANTRY_TEST_NATS`), three `gantry
//! runner`s, and the scripted model. A thread created through replica A
//! whose runner is connected to replica B runs a turn; an SSE client on A
//! sees every update; B is killed (SIGKILL) mid-turn; its runners move to
//! A, the turn's remaining updates arrive, and a follower resuming with
//! `Last-Event-ID` sees no gap and no duplicate.

use std::process::Stdio;

use gantry_testkit::postgres::TestDatabase;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::{Value, json};

use crate::runner_control_plane::{
    ControlPlane, Follow, Proc, Sse, control_plane_cli, curl, eventually, is_item, is_turn,
    runner_command, start_control_plane_with,
};

/// The NATS server of the tests; `None` (the test skips) when it is
/// unreachable and `GANTRY_TEST_NO_NATS=1` outside CI.
fn nats_url() -> Option<String> {
    let url =
        std::env::var("GANTRY_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
    if std::net::TcpStream::connect(url.trim_start_matches("nats://")).is_ok() {
        return Some(url);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("GANTRY_TEST_NO_NATS").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED: NATS at {url} is unreachable and GANTRY_TEST_NO_NATS=1");
        return None;
    }
    panic!(
        "NATS at {url} is unreachable. Start it with JetStream (.ci/run does), point \
         GANTRY_TEST_NATS at one, or set GANTRY_TEST_NO_NATS=1 to skip locally (never in CI)"
    );
}

/// The runners replica `http` lists, by name: (id, connected).
fn runners(http: &str) -> Vec<(String, String, bool)> {
    let (_, listed) = curl("GET", &format!("http://{http}/v1/runners"), None);
    listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["id"].as_str().unwrap_or_default().to_owned(),
                r["connected"] == true,
            )
        })
        .collect()
}

/// How many runner channels replica `http` holds (its `/metrics`).
fn connected_here(http: &str) -> u64 {
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "30", &format!("http://{http}/metrics")])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("gantry_cp_runners_connected "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the metric is there")
}

/// The seqs of events.
fn seqs(events: &[Sse]) -> Vec<u64> {
    events.iter().map(|e| e.id.parse().unwrap()).collect()
}

#[test]
fn a_replica_dies_mid_turn_and_its_runners_finish_the_turn_on_the_other() {
    let Some(nats) = nats_url() else { return };
    // The mock model and the database's guard live on a runtime of their
    // own; the test itself drives processes.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(db) = runtime.block_on(TestDatabase::create()) else {
        return;
    };
    let _enter = runtime.enter();
    let store = db.url();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cp_data = tmp.path().join("cp");
    std::fs::create_dir_all(&home).unwrap();
    // The command waits for a file the test creates: the turn is mid-command
    // for as long as the test needs.
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": "while [ ! -e release ]; do sleep 0.05; done; echo built"}),
        ),
        Step::text("Built it."),
    ]))
    .unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"mock/gpt-4.1\"\n[providers.mock]\nkind = \"openai-chat\"\nbase_url = \"{}\"\napi_key = \"sk-test\"\nmodels = [\"gpt-4.1\"]\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let mut tokens = Vec::new();
    for name in ["r1", "r2", "r3"] {
        let out = control_plane_cli(&home, &cp_data, &["add-runner", name, "--store", &store]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = tmp.path().join(format!("{name}.token"));
        std::fs::write(&file, &out.stdout).unwrap();
        tokens.push(file);
    }
    // Replica ids of this run only (the NATS server outlives it).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let run = format!("{}-{nanos}", std::process::id());
    let replica = |id: &str| -> ControlPlane {
        let id = format!("{id}-{run}");
        let flags = ["--store", &store, "--nats", &nats, "--replica-id", &id];
        start_control_plane_with(&home, &cp_data, "127.0.0.1:0", "127.0.0.1:0", &flags)
    };
    let (a, b) = (replica("a"), replica("b"));
    let (ga, gb) = (format!("http://{}", a.grpc), format!("http://{}", b.grpc));
    // r1 and r2 dial B first, r3 dials A first; each moves to the other
    // when its channel breaks.
    let mut procs = Vec::new();
    for (n, token) in tokens.iter().enumerate() {
        let urls = if n < 2 {
            format!("{gb},{ga}")
        } else {
            format!("{ga},{gb}")
        };
        let child = runner_command(
            &home,
            &urls,
            token,
            &tmp.path().join(format!("workspaces-{n}")),
            &tmp.path().join(format!("runner-{n}")),
            &config,
        )
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        procs.push(Proc(child));
    }
    let http = a.http.clone();
    eventually("replica A lists the three runners connected", || {
        let listed = runners(&http);
        listed.len() == 3 && listed.iter().all(|(_, _, connected)| *connected)
    });
    // The channels are where the runners dialed: two on B, one on A.
    assert_eq!(connected_here(&b.http), 2);
    assert_eq!(connected_here(&a.http), 1);
    let r1 = runners(&http)
        .into_iter()
        .find(|(name, _, _)| name == "r1")
        .map(|(_, id, _)| id)
        .unwrap();

    // Through A, on r1 (whose channel is on B).
    let (status, agent) = curl(
        "POST",
        &format!("http://{http}/v1/agents"),
        Some(json!({"sdk": "gantry", "runner_id": r1})),
    );
    assert_eq!(status, 201, "{agent}");
    let agent = agent["id"].as_str().unwrap().to_owned();
    let (status, thread) = curl(
        "POST",
        &format!("http://{http}/v1/agents/{agent}/threads"),
        Some(json!({"model": "mock/gpt-4.1"})),
    );
    assert_eq!(status, 201, "{thread}");
    let thread = thread["id"].as_str().unwrap().to_owned();
    let follow = Follow::start(&http, &thread, None);
    let (status, sent) = curl(
        "POST",
        &format!("http://{http}/v1/threads/{thread}/messages"),
        Some(json!({"text": "build the project"})),
    );
    assert_eq!(status, 202, "{sent}");
    let mut seen = follow.until(|e| is_item(e, "command_execution", "running"));
    assert!(seen.iter().any(|e| is_turn(e, "running")));

    // B dies mid-turn, with no goodbye (SIGKILL).
    drop(b);
    let workspace = tmp.path().join("workspaces-0").join(&thread);
    std::fs::write(workspace.join("release"), "").unwrap();
    seen.extend(follow.until(|e| is_turn(e, "completed")));
    let all = seqs(&seen);
    assert_eq!(
        all,
        (1..=all.len() as u64).collect::<Vec<_>>(),
        "every update once, in order, on the replica that did not write them"
    );
    let answer = seen
        .iter()
        .find(|e| is_item(e, "agent_message", "completed"))
        .expect("the answer arrived");
    assert_eq!(answer.data["data"]["text"], "Built it.");

    // A follower resuming after the last update before the kill gets the
    // rest once; one from the start gets what the first saw, unchanged.
    let before_kill = seen
        .iter()
        .position(|e| is_item(e, "command_execution", "running"))
        .unwrap();
    let last = &seen[before_kill].id;
    let resumed = Follow::start(&http, &thread, Some(last));
    let rest = resumed.until(|e| is_turn(e, "completed"));
    assert_eq!(seqs(&rest), all[before_kill + 1..].to_vec());
    let replay = Follow::start(&http, &thread, None).until(|e| is_turn(e, "completed"));
    let replayed: Vec<(String, Value)> = replay
        .iter()
        .map(|e| (e.id.clone(), e.data.clone()))
        .collect();
    let live: Vec<(String, Value)> = seen
        .iter()
        .map(|e| (e.id.clone(), e.data.clone()))
        .collect();
    assert_eq!(replayed, live, "nothing acknowledged is lost or changed");

    // r1 and r2 are on A now.
    eventually("the runners of the dead replica reconnect to A", || {
        connected_here(&http) == 3
    });
    let (_, view) = curl("GET", &format!("http://{http}/v1/threads/{thread}"), None);
    assert_eq!(view["turns"][0]["status"], "completed", "{view}");
    drop(a);
}
