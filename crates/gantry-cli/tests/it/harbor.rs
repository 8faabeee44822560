//! Harbor, Terminal-Bench's harness (PyPI `harbor`, in the venv `.ci/run`
//! makes: `GANTRY_TEST_HARBOR_PYTHON`), runs Gantry: a scripted turn's
//! ATIF trajectory, from `gantry exec --trajectory`, `gantry threads
//! export` and `GET /v1/threads/{id}/trajectory`, validates with Harbor's
//! own trajectory models (and one missing a required field does not);
//! `gantry exec --report` says how runs ended; Harbor's agent loader loads
//! clients/harbor and runs `gantry exec` through it; Harbor's ACP agent
//! and runner drive `gantry acp` from the registry entry in
//! clients/acp-registry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::*;

/// The Harbor venv's python; `.ci/run` makes it (Harbor needs 3.12+).
fn harbor_python() -> String {
    std::env::var("GANTRY_TEST_HARBOR_PYTHON").unwrap_or_else(|_| {
        panic!("GANTRY_TEST_HARBOR_PYTHON is not set: .ci/run makes Harbor's venv and sets it")
    })
}

/// clients/harbor/tests/NAME.
fn harbor_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../clients/harbor/tests")
        .join(name)
}

/// Runs one of clients/harbor/tests' scripts with Harbor's python; the
/// model cost map stays local (Harbor's import fetches it otherwise).
fn harbor(script: &str, args: &[&str]) -> Output {
    Command::new(harbor_python())
        .arg(harbor_script(script))
        .args(args)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", harbor_python()))
}

/// What Harbor's models read in each trajectory file (one JSON line each).
fn validated(files: &[&Path]) -> Vec<Value> {
    let paths: Vec<&str> = files
        .iter()
        .map(|f| f.to_str().expect("utf-8 path"))
        .collect();
    let out = harbor("validate_trajectory.py", &paths);
    assert!(
        out.status.success(),
        "Harbor refused a trajectory: {}",
        stderr(&out)
    );
    json_lines(&out)
}

/// Three rounds: reasoning and a command that fails (`ls` of a missing
/// file exits 2), a command that works, the answer; fixed token counts.
fn build_fails() -> Value {
    let usage = |p: u64, c: u64| json!({"prompt_tokens": p, "completion_tokens": c});
    json!({"steps": [
        {"reply": {"reasoning": "The build script may be missing.", "text": "Checking the build script.",
                   "usage": usage(100, 10),
                   "tool_calls": [{"name": "shell", "arguments": {"command": "ls build.sh"}}]}},
        {"reply": {"usage": usage(120, 20),
                   "tool_calls": [{"name": "shell", "arguments": {"command": "echo ok > built.txt && cat built.txt"}}]}},
        {"reply": {"text": "build.sh is missing; I wrote built.txt instead.", "usage": usage(140, 5)}}
    ]})
}

/// Checks what a user of the trajectory reads in it: four steps (the
/// input, the three rounds), the failed command's arguments, output and
/// exit code, the reasoning, per-round tokens, the totals.
fn assert_build_fails_trajectory(t: &Value, thread: &str) {
    assert_eq!(t["schema_version"], "ATIF-v1.8");
    assert_eq!(t["session_id"], thread);
    assert_eq!(t["agent"], "gantry");
    assert_eq!(t["version"], env!("CARGO_PKG_VERSION"));
    let steps = t["steps"].as_array().expect("steps");
    let sources: Vec<&str> = steps
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["user", "agent", "agent", "agent"], "{t}");
    assert_eq!(steps[0]["message"], "why does the build fail?");
    let failed = &steps[1];
    assert_eq!(failed["reasoning"], "The build script may be missing.");
    assert_eq!(failed["message"], "Checking the build script.");
    assert_eq!(failed["tool_calls"][0]["name"], "shell");
    assert_eq!(
        failed["tool_calls"][0]["arguments"]["command"],
        "ls build.sh"
    );
    assert_eq!(failed["results"][0]["exit_code"], 2, "{failed}");
    let output = failed["results"][0]["content"].as_str().expect("output");
    assert!(output.contains("build.sh"), "{output}");
    assert_eq!(failed["prompt_tokens"], 100);
    assert_eq!(failed["completion_tokens"], 10);
    assert!(failed["duration_ms"].is_u64(), "{failed}");
    assert_eq!(steps[2]["results"][0]["exit_code"], 0);
    assert_eq!(
        steps[3]["message"],
        "build.sh is missing; I wrote built.txt instead."
    );
    assert_eq!(t["total_prompt_tokens"], 360);
    assert_eq!(t["total_completion_tokens"], 35);
    assert_eq!(t["total_steps"], 4);
}

/// `gantry serve`'s HTTP API on the scratch data dir; the child and the API's base URL.
fn serve_http(s: &Scratch) -> (std::process::Child, String) {
    let mut cmd = s.gantry();
    cmd.env("XDG_CONFIG_HOME", s.dir.path().join("xdg")).args([
        "serve",
        "--listen-addr",
        "127.0.0.1:0",
        "--http-addr",
        "127.0.0.1:0",
    ]);
    let (child, said) = spawn_announcing(
        cmd,
        &["gantry: serving the HTTP API and dashboard on http://"],
    );
    (child, format!("http://{}", said[0].trim_end_matches('/')))
}

/// Stops a server with SIGTERM; it must exit cleanly.
fn stop(mut child: std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    assert!(child.wait().expect("wait").success());
}

/// curl (a client Gantry did not write): the status and the body.
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl");
    let text = stdout(&out);
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (code.trim().parse().expect("status"), body.to_owned())
}

#[test]
fn harbor_validates_the_trajectory_of_a_scripted_turn_exported_every_way() {
    let s = Scratch::new();
    let model = s.script("build.json", build_fails());
    let traj_file = s.dir.path().join("out/trajectory.json");
    let report_file = s.dir.path().join("out/report.json");
    let out = s.run(&[
        "exec",
        "--model",
        &model,
        "--trajectory",
        traj_file.to_str().unwrap(),
        "--report",
        report_file.to_str().unwrap(),
        "why does the build fail?",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&read(&report_file)).expect("report JSON");
    let thread = report["thread_id"].as_str().expect("thread id").to_owned();

    // `gantry threads export`, to stdout and to a file.
    let exported = s.run(&["threads", "export", &thread, "--format", "atif"]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    let export_file = s.dir.path().join("export.json");
    std::fs::write(&export_file, &exported.stdout).expect("write export");
    let to_file = s.dir.path().join("export-o.json");
    let out = s.run(&[
        "threads",
        "export",
        &thread,
        "-o",
        to_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The HTTP API, from a server on the same data dir.
    let (server, base) = serve_http(&s);
    let (status, body) = curl(&[&format!("{base}/v1/threads/{thread}/trajectory")]);
    assert_eq!(status, 200, "{body}");
    let http_file = s.dir.path().join("http.json");
    std::fs::write(&http_file, &body).expect("write http");
    // A thread with no turn has no trajectory yet (ATIF wants a step).
    let (status, created) = curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        "{}",
        &format!("{base}/v1/threads"),
    ]);
    assert_eq!(status, 201, "{created}");
    let empty: Value = serde_json::from_str(&created).expect("thread JSON");
    let (status, refused) = curl(&[&format!(
        "{base}/v1/threads/{}/trajectory",
        empty["id"].as_str().expect("id")
    )]);
    assert_eq!(status, 409, "{refused}");
    let (status, _) = curl(&[&format!("{base}/v1/threads/no-such-thread/trajectory")]);
    assert_eq!(status, 404);
    let (_, openapi) = curl(&[&format!("{base}/openapi.json")]);
    let openapi: Value = serde_json::from_str(&openapi).expect("OpenAPI JSON");
    assert!(
        openapi["paths"]["/v1/threads/{id}/trajectory"]["get"].is_object(),
        "the route is documented"
    );
    stop(server);

    let files = [&traj_file, &export_file, &to_file, &http_file].map(PathBuf::as_path);
    let seen = validated(&files);
    for t in &seen {
        assert_build_fails_trajectory(t, &thread);
    }
    // One mapping: every way gives the same steps and totals.
    let docs: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_str(&read(f)).expect("JSON"))
        .collect();
    for doc in &docs[1..] {
        assert_eq!(doc["steps"], docs[0]["steps"]);
        assert_eq!(doc["final_metrics"], docs[0]["final_metrics"]);
    }

    // A required field missing: Harbor refuses it, naming it.
    let mut broken = docs[0].clone();
    broken["agent"]
        .as_object_mut()
        .expect("agent")
        .remove("version");
    let broken_file = s.dir.path().join("broken.json");
    std::fs::write(&broken_file, broken.to_string()).expect("write broken");
    let out = harbor("validate_trajectory.py", &[broken_file.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "Harbor accepted a trajectory without agent.version"
    );
    let why = stderr(&out);
    assert!(
        why.contains("agent.version") && why.contains("Field required"),
        "{why}"
    );
}

#[test]
fn exec_reports_how_the_run_ended_completed_failed_or_over_its_limit() {
    let s = Scratch::new();
    let model = s.script("build.json", build_fails());
    let report = |name: &str| s.dir.path().join(name);
    let read_report = |path: &Path| -> Value {
        serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };

    // Completed, with its usage, wall time and trajectory.
    let done = report("done.json");
    let traj = report("t.json");
    let out = s.run(&[
        "exec",
        "--model",
        &model,
        "--report",
        done.to_str().unwrap(),
        "--trajectory",
        traj.to_str().unwrap(),
        "why does the build fail?",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = read_report(&done);
    assert_eq!(r["schema"], "gantry.run_report.v1");
    assert_eq!(r["outcome"], "completed");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["usage"]["input_tokens"], 360);
    assert_eq!(r["usage"]["output_tokens"], 35);
    assert_eq!(r["rounds"], 3);
    assert_eq!(
        r["final_message"],
        "build.sh is missing; I wrote built.txt instead."
    );
    assert_eq!(r["trajectory"], traj.to_str().unwrap());
    assert_eq!(r["model"], model);
    assert!(r["wall_time_ms"].as_u64().is_some_and(|ms| ms > 0), "{r}");
    assert!(r.get("reason").is_none(), "{r}");

    // Failed: the model server is unreachable; the reason and kind say so.
    let failed = report("failed.json");
    let out = s
        .gantry()
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "exec",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "gpt-4.1",
            "--max-retries",
            "0",
            "--report",
            failed.to_str().unwrap(),
            "hello",
        ])
        .output()
        .expect("run gantry");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = read_report(&failed);
    assert_eq!(r["outcome"], "failed");
    assert_eq!(r["failure"], "model_unreachable", "{r}");
    assert_eq!(r["exit_code"], 1);
    assert!(r["reason"].as_str().is_some_and(|w| !w.is_empty()), "{r}");
    assert!(
        r["thread_id"].is_string() && r["turn_id"].is_string(),
        "{r}"
    );
    assert!(r["trajectory"].is_null());

    // Failed before any turn: a model script that does not exist.
    let early = report("early.json");
    let out = s.run(&[
        "exec",
        "--model",
        "scripted:/no/such/script.json",
        "--report",
        early.to_str().unwrap(),
        "hello",
    ]);
    assert!(!out.status.success());
    let r = read_report(&early);
    assert_eq!(r["outcome"], "failed");
    assert!(r["thread_id"].is_null(), "{r}");
    assert!(
        r["reason"]
            .as_str()
            .is_some_and(|w| w.contains("model script")),
        "{r}"
    );

    // Over its limit: a round limit of 1 for a three-round script.
    let limited = report("limited.json");
    let out = s.run(&[
        "exec",
        "--model",
        &model,
        "--max-rounds",
        "1",
        "--report",
        limited.to_str().unwrap(),
        "why does the build fail?",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = read_report(&limited);
    assert_eq!(r["outcome"], "budget_exceeded", "{r}");
    assert_eq!(r["limit"], "max_rounds");
    assert_eq!(r["rounds"], 1);

    // Written whole: no temp file is left beside the reports.
    let left: Vec<PathBuf> = std::fs::read_dir(s.dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn harbor_loads_the_adapter_and_runs_gantry_exec_through_it() {
    let s = Scratch::new();
    let model = s.script("build.json", build_fails());
    let work = s.dir.path().join("harbor");
    let out = harbor(
        "check_adapter.py",
        &[env!("CARGO_BIN_EXE_gantry"), &model, work.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r: Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(r["class"], "gantry_harbor.agent:Gantry");
    assert_eq!(r["name"], "gantry");
    assert_eq!(
        r["version"],
        env!("CARGO_PKG_VERSION"),
        "found by `gantry --version`"
    );
    assert_eq!(r["atif"], true);
    let installed = work.join("installed/gantry");
    let setup = r["setup"].to_string();
    assert!(
        setup.contains(&format!("\"upload\":\"{}\"", installed.display())),
        "{setup}"
    );
    assert!(setup.contains("--version"), "{setup}");
    assert!(
        work.join("installed/config.toml").is_file(),
        "the providers' config"
    );

    // The run: one `gantry exec` with the model, a report and a trajectory.
    let run = r["run"].as_array().expect("run calls");
    assert_eq!(run.len(), 1, "{run:?}");
    let command = run[0]["exec"].as_str().expect("command");
    for part in [
        "exec",
        "--model",
        &model,
        "--report",
        "--trajectory",
        "--json",
        "Find out why the build fails.",
    ] {
        assert!(command.contains(part), "{part} in {command}");
    }
    let context = &r["context"];
    assert_eq!(context["n_input_tokens"], 360, "{context}");
    assert_eq!(context["n_output_tokens"], 35);
    assert_eq!(context["metadata"]["gantry"]["outcome"], "completed");
    assert_eq!(r["trajectory_steps"], 4);
    assert_eq!(r["trajectory_agent"], "gantry");
    assert!(
        work.join("logs/gantry.txt").is_file(),
        "the run's output is kept"
    );

    // A vendor model's key travels in the environment, not the command.
    assert_eq!(r["vendor_env"], json!(["ANTHROPIC_API_KEY"]));
    assert_eq!(r["vendor_key_in_command"], false);
    let vendor = r["vendor_command"].as_str().expect("command");
    assert!(
        vendor.contains("--model anthropic/claude-sonnet-4-5"),
        "{vendor}"
    );
}

#[test]
fn harbor_acp_agent_runs_gantry_acp_from_its_registry_entry() {
    let s = Scratch::new();
    let model = s.script("build.json", build_fails());
    let work = s.dir.path().join("acp");
    std::fs::create_dir_all(&work).expect("work dir");
    let out = harbor(
        "check_acp.py",
        &[env!("CARGO_BIN_EXE_gantry"), &model, work.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let r: Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");

    let entry = &r["registry"];
    assert_eq!(entry["id"], "gantry");
    assert_eq!(
        entry["version"],
        env!("CARGO_PKG_VERSION"),
        "the entry's version is the release's"
    );
    assert_eq!(entry["kind"], "binary");
    let launcher = entry["launcher"].as_str().expect("launcher");
    assert!(
        launcher.contains("exec /opt/harbor-acp-agent/dist/gantry acp"),
        "{launcher}"
    );

    let run = &r["runner"];
    assert_eq!(run["exit_code"], 0, "{run}");
    assert!(run["error"].is_null(), "{run}");
    assert_eq!(run["set_model_mechanism"], "session_config_option");
    assert_eq!(run["resolved_model"], model);
    assert_eq!(run["stop_reason"], "end_turn");
    assert_eq!(run["usage"]["inputTokens"], 360, "{run}");
    assert_eq!(run["context"]["n_input_tokens"], 360);
    assert_eq!(run["context"]["n_output_tokens"], 35);
    let steps = run["trajectory_steps"].as_array().expect("steps");
    assert_eq!(steps.first(), Some(&json!("user")));
    assert!(steps.len() >= 2, "{run}");
    assert!(
        run["trajectory_tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "the commands are tool calls in Harbor's trajectory: {run}"
    );

    let vendor = &r["vendor"];
    assert_eq!(vendor["current"], "anthropic/claude-sonnet-4-5", "{vendor}");
    assert_eq!(vendor["candidates"][0], "anthropic/claude-sonnet-4-5");
}
