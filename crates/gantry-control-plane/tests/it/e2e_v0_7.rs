//! A real Gantry runner speaking 0.7.0 under the control plane, end to
//! end: a thread created over HTTP with MCP servers, git skill packages and
//! (always) a CLI secret, and what its turns get of each.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gantry_core::{Engine, EngineBuilder, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use proto_runner_control::{
    self as runner, Backoff, CLI_SECRET_ENV, ControlPlaneUrl, RunnerCommandEnv, RunnerOptions,
};
use serde_json::{Value, json};
use support::{GUARD, Harness, guarded};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A 0.7 runner with its engine, under the harness's control plane.
pub(crate) struct Runner07 {
    engine: Engine,
    stop: CancellationToken,
    task: JoinHandle<Result<(), runner::RunnerError>>,
    /// The runner's data: its store and workspaces.
    dir: PathBuf,
}

impl Runner07 {
    pub(crate) async fn start(h: &Harness, dir: &Path, token: String, llm: &MockLlm) -> Self {
        Self::start_with(h, dir, token, llm, None).await
    }

    /// [`Runner07::start`], its `git` commands given the token in `github_token_file`.
    async fn start_with(
        h: &Harness,
        dir: &Path,
        token: String,
        llm: &MockLlm,
        github_token_file: Option<PathBuf>,
    ) -> Self {
        let mut config = ClientConfig::new(llm.base_url());
        config.retry.max_retries = 0;
        let models = Arc::new(SingleModel(Arc::new(
            OpenAiChatClient::new(config).unwrap(),
        )));
        std::fs::create_dir_all(dir).unwrap();
        let store = Arc::new(SqliteStore::open(&dir.join("gantry.db")).await.unwrap());
        // Threads' secrets beside the store, as `gantry runner` keeps them.
        let mut command_env = RunnerCommandEnv::new(Some(dir.join("runner-secrets")));
        if let Some(file) = github_token_file {
            command_env = command_env.github_token_file(file);
        }
        let command_env = command_env.shared();
        let engine = EngineBuilder::new(store, models)
            .command_env_source(command_env.clone())
            .start()
            .await
            .unwrap();
        let options = RunnerOptions {
            url: ControlPlaneUrl::parse(&format!("http://{}", h.grpc)).unwrap(),
            failover: Vec::new(),
            protocol: runner::ProtocolVersion::V0_7,
            token,
            ca_pem: None,
            workspaces: dir.join("workspaces"),
            backoff: Backoff::new(Duration::from_millis(20), Duration::from_millis(200)),
            command_env: Some(command_env),
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(runner::run(engine.clone(), options, stop.clone()));
        Runner07 {
            engine,
            stop,
            task,
            dir: dir.to_owned(),
        }
    }

    pub(crate) async fn stop(self) {
        self.stop.cancel();
        guarded("the runner to stop", self.task)
            .await
            .unwrap()
            .unwrap();
        self.engine.shutdown().await.unwrap();
    }
}

/// Waits until the runner is listed as connected; the first model it offers.
pub(crate) async fn wait_connected(h: &Harness, runner_id: &str) -> String {
    let deadline = Instant::now() + GUARD;
    loop {
        let (_, runners) = h.get("/v1/runners").await;
        let runner = runners
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == runner_id)
            .cloned()
            .unwrap();
        if runner["connected"] == true {
            assert_eq!(runner["protocol"], "0.7", "{runner}");
            return runner["sdks"][0]["models"][0]["name"]
                .as_str()
                .unwrap()
                .to_owned();
        }
        assert!(Instant::now() < deadline, "the runner never connected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `text` to the thread and follows its events until the turn ends;
/// the thread as the API then shows it.
async fn run_turn(h: &Harness, thread_id: &str, text: &str) -> Value {
    let mut events = h.follow(thread_id, None).await;
    let (status, accepted) = h
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({ "text": text }),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let turn_id = accepted["turn_id"].as_str().unwrap().to_owned();
    loop {
        let event = guarded("the turn to complete", events.next())
            .await
            .unwrap();
        let data: Value = serde_json::from_str(&event.data).unwrap();
        if event.event == "turn"
            && data["data"]["id"] == turn_id.as_str()
            && data["data"]["status"] == "completed"
        {
            break;
        }
    }
    h.get(&format!("/v1/threads/{thread_id}")).await.1
}

/// `dist/index.js` of `@modelcontextprotocol/server-everything`, as the
/// other MCP tests find it; `None` (skipped, a failure under CI) without it.
fn everything() -> Option<PathBuf> {
    let path = std::env::var_os("GANTRY_TEST_MCP_EVERYTHING")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../.ci/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            )
        });
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "@modelcontextprotocol/server-everything is not installed (expected at {}): run .ci/run",
        path.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{msg}");
    eprintln!("SKIPPED: {msg}");
    None
}

#[tokio::test]
async fn a_threads_mcp_servers_reach_its_model_and_stop_with_it() {
    let Some(everything) = everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(20)).await;
    let (runner_id, token) = h.add_runner("gantry-07").await;
    let llm = MockLlm::start(Script::new([
        Step::tool_call("mcp__everything__echo", json!({"message": "hello mcp"})),
        Step::text("The server echoed."),
    ]))
    .unwrap();
    let runner = Runner07::start(&h, &dir.path().join("runner"), token, &llm).await;
    let model = wait_connected(&h, &runner_id).await;

    let (status, agent) = h.post("/v1/agents", json!({})).await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({
                "model": model,
                "mcp_servers": [{
                    "name": "everything",
                    "stdio": {
                        "command": "node",
                        "args": [everything],
                        "env": {"EVERYTHING_API_KEY": "mcp-env-secret-value"},
                    },
                }],
            }),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    // Kept by name and transport; the environment's values are not.
    let server = &thread["mcp_servers"][0];
    assert_eq!(server["name"], "everything");
    assert_eq!(server["transport"], "stdio");
    assert_eq!(server["env"], json!(["EVERYTHING_API_KEY"]));
    assert!(!thread.to_string().contains("mcp-env-secret-value"));

    let thread = run_turn(&h, &thread_id, "echo through the server").await;
    let items = thread["turns"][0]["items"].as_array().unwrap();
    let call = items
        .iter()
        .find(|i| i["type"] == "mcp_tool_call")
        .unwrap_or_else(|| panic!("no MCP tool call item: {thread}"));
    assert_eq!(call["status"], "completed", "{call}");

    // The model was offered the server's tools and got the tool's answer.
    let requests = llm.requests();
    let offered = requests[0].body["tools"].to_string();
    assert!(offered.contains("mcp__everything__echo"), "{offered}");
    let answered = requests[1].body["messages"].to_string();
    assert!(answered.contains("Echo: hello mcp"), "{answered}");

    // The server is the thread's own, not the engine's.
    let engine = &runner.engine;
    let id = gantry_types::ThreadId::from(thread_id.as_str());
    assert_eq!(engine.mcp().thread_servers(&id).len(), 1);
    assert!(
        engine.mcp().servers().is_empty(),
        "not an engine-wide server"
    );

    // Deleting the thread stops its server.
    let (status, deleted) = h.delete(&format!("/v1/threads/{thread_id}")).await;
    assert_eq!(status, 200, "{deleted}");
    assert!(engine.mcp().thread_servers(&id).is_empty());

    runner.stop().await;
    h.stop().await;
}

/// A git repository (a `file://` URL) with two skills, `greeter` and
/// `other`, in `skills/`; its URL and the commit's id.
fn skill_repo(dir: &Path) -> (String, String) {
    let repo = dir.join("skills-repo");
    for (name, body) in [
        ("greeter", "Greet in French: say bonjour."),
        ("other", "Other."),
    ] {
        let skill = repo.join("skills").join(name);
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{body}\n"),
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "--quiet"]);
    git(&["add", "."]);
    git(&["commit", "--quiet", "-m", "skills"]);
    let commit = git(&["rev-parse", "HEAD"]);
    // A later commit the thread must not get.
    std::fs::write(
        repo.join("skills/greeter/SKILL.md"),
        "---\nname: greeter\ndescription: x\n---\nLATER\n",
    )
    .unwrap();
    git(&["commit", "--quiet", "-am", "later"]);
    (format!("file://{}", repo.display()), commit)
}

#[tokio::test]
async fn a_threads_git_skills_at_their_reference_reach_its_model() {
    let dir = tempfile::tempdir().unwrap();
    let (url, commit) = skill_repo(dir.path());
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(20)).await;
    let (runner_id, token) = h.add_runner("gantry-07").await;
    let llm = MockLlm::start(Script::new([
        Step::tool_call("skill", json!({"name": "greeter"})),
        Step::text("Bonjour."),
    ]))
    .unwrap();
    let runner = Runner07::start(&h, &dir.path().join("runner"), token, &llm).await;
    let model = wait_connected(&h, &runner_id).await;
    let (_, agent) = h.post("/v1/agents", json!({})).await;
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({
                "model": model,
                "git_skill_packages": [{
                    "repository_url": url,
                    "commit_reference": commit,
                    "skills": ["skills/greeter"],
                }],
            }),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    let skills = runner
        .dir
        .join("workspaces")
        .join(&thread_id)
        .join(".gantry/skills");
    assert!(skills.join("greeter/SKILL.md").is_file());
    assert!(!skills.join("other").exists(), "only the listed directory");

    run_turn(&h, &thread_id, "greet me").await;
    // The model was offered the skill, and got it at the commit asked for.
    let requests = llm.requests();
    assert!(requests[0].body["tools"].to_string().contains("greeter"));
    let after_skill = requests[1].body["messages"].to_string();
    assert!(after_skill.contains("Greet in French"), "{after_skill}");
    assert!(!after_skill.contains("LATER"));

    // A reference the repository does not have refuses the thread, saying so.
    let (status, refused) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({
                "model": model,
                "git_skill_packages": [{"repository_url": url, "commit_reference": "no-such-branch"}],
            }),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-branch"),
        "{refused}"
    );

    runner.stop().await;
    h.stop().await;
}

/// Every file under `dir`, as bytes, with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

#[tokio::test]
async fn a_threads_commands_see_its_cli_secret_and_nothing_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(20)).await;
    let (runner_id, token) = h.add_runner("gantry-07").await;
    let llm = MockLlm::start(Script::new([
        Step::tool_call(
            "shell",
            json!({"command": format!(
                "printf %s \"${CLI_SECRET_ENV}\" > seen-secret; echo length=${{#{CLI_SECRET_ENV}}}"
            )}),
        ),
        Step::text("Done."),
    ]))
    .unwrap();
    let runner = Runner07::start(&h, &dir.path().join("runner"), token, &llm).await;
    let model = wait_connected(&h, &runner_id).await;
    let (_, agent) = h.post("/v1/agents", json!({})).await;
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({"model": model, "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();
    let workspace = runner.dir.join("workspaces").join(&thread_id);

    let thread = run_turn(&h, &thread_id, "use the secret").await;

    // The command had the thread's secret in its environment...
    let secret = std::fs::read_to_string(workspace.join("seen-secret")).unwrap();
    assert!(secret.len() >= 32, "a real secret: {} chars", secret.len());
    let items = thread["turns"][0]["items"].as_array().unwrap();
    let command = items
        .iter()
        .find(|i| i["type"] == "command_execution")
        .unwrap_or_else(|| panic!("no command: {thread}"));
    assert!(
        command
            .to_string()
            .contains(&format!("length={}", secret.len())),
        "{command}"
    );
    // ...and the model was told where it is, never what it is.
    let id = gantry_types::ThreadId::from(thread_id.as_str());
    let view = runner.engine.threads().read(&id).await.unwrap();
    let instructions = view.thread.instructions.clone().unwrap_or_default();
    assert!(instructions.starts_with("Be brief."), "{instructions}");
    assert!(instructions.contains(CLI_SECRET_ENV), "{instructions}");
    for request in &llm.requests() {
        assert!(
            !request.body.to_string().contains(&secret),
            "the secret reached the model"
        );
    }

    // Nowhere in either store (nor its log, nor the API's answers).
    runner.engine.flush().await.unwrap();
    let runner_dir = runner.dir.clone();
    runner.stop().await;
    h.stop().await;
    let stores = files_under(&runner_dir)
        .into_iter()
        .chain(files_under(&dir.path().join("cp")))
        .filter(|(path, _)| path.to_string_lossy().contains(".db"));
    let mut checked = 0;
    for (path, bytes) in stores {
        checked += 1;
        let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(!found, "the secret is in {}", path.display());
    }
    assert!(checked >= 2, "both stores were read");
    assert!(!thread.to_string().contains(&secret));
}

#[tokio::test]
async fn git_commands_of_a_07_thread_get_the_token_file_and_its_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("gh.token");
    std::fs::write(&token_file, "ghs_first\n").unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(20)).await;
    let (runner_id, token) = h.add_runner("gantry-07").await;
    let git = "git config --get http.https://github.com/.extraheader; echo gh=$GH_TOKEN";
    let llm = MockLlm::start(Script::new([
        Step::tool_call("shell", json!({"command": git})),
        Step::tool_call("shell", json!({"command": "echo plain=${#GH_TOKEN}"})),
        Step::text("first"),
        Step::tool_call("shell", json!({"command": git})),
        Step::text("second"),
    ]))
    .unwrap();
    let runner = Runner07::start_with(
        &h,
        &dir.path().join("runner"),
        token,
        &llm,
        Some(token_file.clone()),
    )
    .await;
    let model = wait_connected(&h, &runner_id).await;
    let (_, agent) = h.post("/v1/agents", json!({})).await;
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({"model": model}),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();

    let outputs = |thread: &Value, turn: usize| -> Vec<String> {
        thread["turns"][turn]["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "command_execution")
            .map(|i| i.to_string())
            .collect()
    };
    use base64::Engine as _;
    let header = |token: &str| {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        format!("AUTHORIZATION: basic {basic}")
    };
    let thread = run_turn(&h, &thread_id, "push").await;
    let first = outputs(&thread, 0);
    assert_eq!(first.len(), 2, "{thread}");
    assert!(first[0].contains(&header("ghs_first")), "{}", first[0]);
    assert!(first[0].contains("gh=ghs_first"), "{}", first[0]);
    assert!(
        first[1].contains("plain=0"),
        "not for other commands: {}",
        first[1]
    );

    // Rotated by whatever writes the file: the next git command has it.
    std::fs::write(&token_file, "ghs_second\n").unwrap();
    let thread = run_turn(&h, &thread_id, "push again").await;
    let second = outputs(&thread, 1);
    assert!(second[0].contains("gh=ghs_second"), "{}", second[0]);

    runner.stop().await;
    h.stop().await;
}

#[tokio::test]
async fn an_interrupted_turn_of_a_gantry_runner_reads_as_interrupted_with_nothing_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(&dir.path().join("cp"), Duration::from_secs(20)).await;
    let (runner_id, token) = h.add_runner("gantry-07").await;
    // An answer streamed slowly enough to be cut: the interrupt comes once
    // its first words are seen, long before its last.
    let slow = Step::Reply(gantry_testkit::Reply {
        text: "word ".repeat(200),
        chunk_size: 5,
        delay_ms: 100,
        ..gantry_testkit::Reply::default()
    });
    let llm = MockLlm::start(Script::new([slow])).unwrap();
    let runner = Runner07::start(&h, &dir.path().join("runner"), token, &llm).await;
    let model = wait_connected(&h, &runner_id).await;
    let (_, agent) = h.post("/v1/agents", json!({})).await;
    let agent_id = agent["id"].as_str().unwrap();
    let (status, thread) = h
        .post(
            &format!("/v1/agents/{agent_id}/threads"),
            json!({ "model": model }),
        )
        .await;
    assert_eq!(status, 201, "{thread}");
    let thread_id = thread["id"].as_str().unwrap().to_owned();

    let mut events = h.follow(&thread_id, None).await;
    let (status, accepted) = h
        .post(
            &format!("/v1/threads/{thread_id}/messages"),
            json!({ "text": "write an essay" }),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let mut seen = Vec::new();
    let mut interrupted = false;
    loop {
        let event = guarded("the turn to end", events.next()).await.unwrap();
        let update: Value = serde_json::from_str(&event.data).unwrap();
        let data = update["data"].clone();
        seen.push((
            update["kind"].as_str().unwrap_or("").to_owned(),
            data["type"].as_str().unwrap_or("").to_owned(),
            data["status"].as_str().unwrap_or("").to_owned(),
        ));
        if !interrupted && data["type"] == "agent_message" && data["status"] == "running" {
            let (status, sent) = h
                .post(&format!("/v1/threads/{thread_id}/interrupt"), json!({}))
                .await;
            assert_eq!(status, 202, "{sent}");
            interrupted = true;
        }
        if update["kind"] == "turn" && data["status"] == "interrupted" {
            break;
        }
    }
    // One end of the turn (the runner says it once, under the message's
    // request id), and it says it was interrupted.
    let turn_ends: Vec<_> = seen
        .iter()
        .filter(|(kind, _, status)| kind == "turn" && status != "running")
        .map(|(_, _, status)| status.as_str())
        .collect();
    assert_eq!(turn_ends, ["interrupting", "interrupted"], "{seen:?}");
    let (_, detail) = h.get(&format!("/v1/threads/{thread_id}")).await;
    let turn = &detail["turns"][0];
    assert_eq!(turn["id"], accepted["turn_id"]);
    assert_eq!(turn["status"], "interrupted", "{detail}");
    let items = turn["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["status"] != "running"), "{detail}");
    // The cut answer ended with the words said before the interrupt.
    let answer = items.iter().find(|i| i["type"] == "agent_message").unwrap();
    let text = answer["text"].as_str().unwrap();
    assert!(text.starts_with("word") && text.len() < 1000, "{text}");
    let (_, runners) = h.get("/v1/runners").await;
    assert_eq!(runners[0]["running_turns"], 0, "{runners}");
    runner.stop().await;
    h.stop().await;
}
