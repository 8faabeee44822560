//! `gantry control-plane serve --store postgres://...` (a fresh database)
//! with a real `gantry runner` and the mock model: a turn runs, an API
//! token is made from the CLI meanwhile, the control plane is killed and
//! started again on the same database, and the runner, agent, thread, its
//! history and the token are all there; the runner reconnects by itself and
//! a second turn continues the thread's log. Nothing lands in the data dir's SQLite
//! file.

use std::path::Path;
use std::process::Stdio;

use gantry_testkit::postgres::TestDatabase;
use gantry_testkit::{MockLlm, Script, Step};
use serde_json::json;

use crate::runner_control_plane::{
    Follow, Proc, control_plane_cli, curl, curl_as, curl_status, eventually, is_item, is_turn,
    lines, runner_command, start_control_plane_with, wait_line,
};

/// `gantry control-plane ARGS... --store URL --data-dir DATA`: it succeeded; its stdout.
fn cli_ok(home: &Path, data: &Path, url: &str, args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.extend(["--store", url]);
    let out = control_plane_cli(home, data, &args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_control_plane_on_postgres_keeps_runners_threads_and_tokens_across_a_restart() {
    // The mock model and the database's guard live on a runtime of their
    // own; the test itself drives processes.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(db) = runtime.block_on(TestDatabase::create()) else {
        return;
    };
    let _enter = runtime.enter();
    let url = db.url();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cp_data = tmp.path().join("cp");
    let runner_data = tmp.path().join("runner");
    let workspaces = tmp.path().join("workspaces");
    std::fs::create_dir_all(&home).unwrap();
    let llm = MockLlm::start(Script::new(vec![
        Step::text("Done on PostgreSQL."),
        Step::text("Still here after the restart."),
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

    // The runner is added before the server runs, from the CLI, on the database.
    let token_file = tmp.path().join("builder-1.token");
    std::fs::write(
        &token_file,
        cli_ok(&home, &cp_data, &url, &["add-runner", "builder-1"]),
    )
    .unwrap();
    let store_flag = ["--store", url.as_str()];
    let cp = start_control_plane_with(&home, &cp_data, "127.0.0.1:0", "127.0.0.1:0", &store_flag);
    let mut runner = runner_command(
        &home,
        &format!("http://{}", cp.grpc),
        &token_file,
        &workspaces,
        &runner_data,
        &config,
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let runner_log = lines(runner.stderr.take().unwrap());
    let _runner = Proc(runner);
    wait_line(&runner_log, "gantry: runner dialing");

    let http = cp.http.clone();
    eventually("the runner connects", || {
        let (_, runners) = curl("GET", &format!("http://{http}/v1/runners"), None);
        runners[0]["connected"] == true
    });
    let (status, agent) = curl(
        "POST",
        &format!("http://{http}/v1/agents"),
        Some(json!({"sdk": "gantry"})),
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
        Some(json!({"text": "build it"})),
    );
    assert_eq!(status, 202, "{sent}");
    let first_turn = follow.until(|e| is_turn(e, "completed"));
    let last_seen = first_turn.last().unwrap().id.clone();
    assert!(
        first_turn
            .iter()
            .any(|e| is_item(e, "agent_message", "completed")
                && e.data["data"]["text"] == "Done on PostgreSQL.")
    );
    drop(follow);

    // A token made by another process while the server runs, on the same
    // database: the server asks for it from then on.
    let token = cli_ok(&home, &cp_data, &url, &["create-token", "--name", "ops"])
        .trim()
        .to_owned();
    let runners_url = format!("http://{http}/v1/runners");
    assert_eq!(curl_status(&runners_url, None), 401);
    assert_eq!(curl_status(&runners_url, Some(&token)), 200);

    // Killed, and started again on the same addresses and database.
    let (grpc_addr, http_addr) = (cp.grpc.clone(), cp.http.clone());
    drop(cp);
    let cp = start_control_plane_with(&home, &cp_data, &grpc_addr, &http_addr, &store_flag);
    let http = cp.http.clone();
    let token = Some(token.as_str());
    let (status, runners) = curl_as(token, "GET", &format!("http://{http}/v1/runners"), None);
    assert_eq!(status, 200, "the token survived: {runners}");
    assert_eq!(runners[0]["name"], "builder-1");
    let (_, agents) = curl_as(token, "GET", &format!("http://{http}/v1/agents"), None);
    assert_eq!(agents[0]["id"], agent.as_str());
    let (_, view) = curl_as(
        token,
        "GET",
        &format!("http://{http}/v1/threads/{thread}"),
        None,
    );
    assert_eq!(view["turns"][0]["status"], "completed", "{view}");
    let texts: Vec<&str> = view["turns"][0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["text"].as_str())
        .collect();
    assert_eq!(texts, ["build it", "Done on PostgreSQL."]);
    // The whole history replays from the database.
    let replay = Follow::start_as(token, &http, &thread, None);
    let replayed = replay.until(|e| e.id == last_seen);
    assert_eq!(
        replayed.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        first_turn.iter().map(|e| e.id.clone()).collect::<Vec<_>>()
    );

    // The runner comes back by itself, and a second turn runs.
    eventually("the runner reconnects", || {
        let (_, runners) = curl_as(token, "GET", &format!("http://{http}/v1/runners"), None);
        runners[0]["connected"] == true
    });
    let (status, sent) = curl_as(
        token,
        "POST",
        &format!("http://{http}/v1/threads/{thread}/messages"),
        Some(json!({"text": "and again"})),
    );
    assert_eq!(status, 202, "{sent}");
    let second_turn = replay.until(|e| is_turn(e, "completed"));
    let first: u64 = last_seen.parse::<u64>().unwrap() + 1;
    let seqs: Vec<u64> = second_turn.iter().map(|e| e.id.parse().unwrap()).collect();
    assert_eq!(
        seqs,
        (first..first + seqs.len() as u64).collect::<Vec<_>>(),
        "the log continues densely after the restart"
    );
    assert!(
        second_turn
            .iter()
            .any(|e| is_item(e, "agent_message", "completed")
                && e.data["data"]["text"] == "Still here after the restart.")
    );
    let out = String::from_utf8(
        control_plane_cli(&home, &cp_data, &["list-tokens", "--store", &url]).stdout,
    )
    .unwrap();
    assert!(out.starts_with("ops\t"), "{out}");
    assert!(
        !cp_data.join("control-plane.db").exists(),
        "nothing in the data dir's SQLite file"
    );
    drop(cp);
    drop(db);
}
