//! `gantry runner`'s side of companyhelm.runner.v1 against a scripted
//! control plane over real gRPC: registration, every request type and the
//! updates they cause, steering, idempotent re-sends, broken requests,
//! reconnects, and GitHub tokens for `git` commands.

mod fake_plane;

use std::sync::Arc;
use std::time::Duration;

use fake_plane::{Conn, FakePlane, TOKEN};
use gantry_core::{Engine, EngineBuilder, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::client_message::Payload;
use gantry_runner_protocol::v0_2::server_message::Request;
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use proto_runner_control::{
    self as runner, Backoff, ControlPlaneUrl, RunnerCommandEnv, RunnerError, RunnerOptions,
};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A runner with its engine and model, connected to a fake control plane.
struct Rig {
    plane: FakePlane,
    llm: MockLlm,
    engine: Engine,
    dir: tempfile::TempDir,
    stop: CancellationToken,
    runner: JoinHandle<Result<(), RunnerError>>,
}

impl Rig {
    async fn start(steps: Vec<Step>) -> Rig {
        Self::start_with_token(steps, TOKEN).await
    }

    async fn start_with_token(steps: Vec<Step>, token: &str) -> Rig {
        let plane = FakePlane::start().await;
        let dir = tempfile::tempdir().unwrap();
        let llm = MockLlm::start(Script::new(steps)).unwrap();
        let (engine, stop, runner) = start_runner(&plane, &[], &llm, dir.path(), token).await;
        Rig {
            plane,
            llm,
            engine,
            dir,
            stop,
            runner,
        }
    }

    /// Stops the runner and its engine (which interrupts the running turn),
    /// and starts them again on the same data.
    async fn restart_runner(&mut self) {
        self.stop.cancel();
        (&mut self.runner).await.unwrap().unwrap();
        self.engine.shutdown().await.expect("events stored");
        let (engine, stop, runner) =
            start_runner(&self.plane, &[], &self.llm, self.dir.path(), TOKEN).await;
        self.engine = engine;
        self.stop = stop;
        self.runner = runner;
    }

    /// Creates agent `a1` and a thread under it (request `t1`).
    async fn agent_and_thread(&self, conn: &mut Conn) -> String {
        conn.send("a-req", create_agent("a1", "gantry")).await;
        assert_eq!(kind(&conn.next().await), "agent a1 ready [a-req]");
        conn.send("t1", create_thread("a1", "test-model")).await;
        let reply = conn.next().await;
        assert_eq!(kind(&reply), "thread t1 ready [t1]");
        "t1".to_owned()
    }
}

/// An engine over `dir` and a runner on it dialing `plane`, then the
/// `failover` ones in turn.
async fn start_runner(
    plane: &FakePlane,
    failover: &[&FakePlane],
    llm: &MockLlm,
    dir: &std::path::Path,
    token: &str,
) -> (
    Engine,
    CancellationToken,
    JoinHandle<Result<(), RunnerError>>,
) {
    let mut config = ClientConfig::new(llm.base_url());
    config.retry.max_retries = 0;
    let models = Arc::new(SingleModel(Arc::new(
        OpenAiChatClient::new(config).unwrap(),
    )));
    let store = Arc::new(SqliteStore::open(&dir.join("gantry.db")).await.unwrap());
    let command_env = RunnerCommandEnv::new(None)
        .github_from_control_plane()
        .shared();
    let engine = EngineBuilder::new(store, models)
        .config(gantry_core::EngineConfig {
            data_dir: Some(dir.join("data")),
            ..Default::default()
        })
        .command_env_source(command_env.clone())
        .start()
        .await
        .unwrap();
    let options = RunnerOptions {
        url: ControlPlaneUrl::parse(&plane.url()).unwrap(),
        failover: failover
            .iter()
            .map(|p| ControlPlaneUrl::parse(&p.url()).unwrap())
            .collect(),
        protocol: runner::ProtocolVersion::V0_2,
        token: token.to_owned(),
        ca_pem: None,
        workspaces: dir.join("workspaces"),
        backoff: Backoff::new(Duration::from_millis(20), Duration::from_millis(200)),
        command_env: Some(command_env),
    };
    let stop = CancellationToken::new();
    let runner = tokio::spawn(runner::run(engine.clone(), options, stop.clone()));
    (engine, stop, runner)
}

fn create_agent(agent: &str, sdk: &str) -> Request {
    Request::CreateAgentRequest(pb::CreateAgentRequest {
        agent_id: agent.into(),
        agent_sdk: sdk.into(),
    })
}

fn create_thread(agent: &str, model: &str) -> Request {
    Request::CreateThreadRequest(pb::CreateThreadRequest {
        agent_id: agent.into(),
        model: model.into(),
        reasoning_level: None,
    })
}

fn message(thread: &str, text: &str, allow_steer: bool) -> Request {
    Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
        agent_id: "a1".into(),
        thread_id: thread.into(),
        text: text.into(),
        allow_steer,
        model: None,
        model_reasoning_level: None,
    })
}

/// One line per message: what it says and the request id it answers.
fn kind(m: &pb::ClientMessage) -> String {
    let body = match &m.payload {
        Some(Payload::AgentUpdate(u)) => format!(
            "agent {} {}",
            u.agent_id,
            status(u.status, &["unknown", "ready", "deleted"])
        ),
        Some(Payload::ThreadUpdate(u)) => format!(
            "thread {} {}",
            u.thread_id,
            status(u.status, &["unknown", "ready", "deleted"])
        ),
        Some(Payload::TurnUpdate(u)) => format!(
            "turn {}",
            status(u.status, &["unknown", "running", "completed"])
        ),
        Some(Payload::ItemUpdate(u)) => format!(
            "{} {}",
            pb::ItemType::try_from(u.item_type).map_or("?", |t| t.as_str_name()),
            status(u.status, &["unknown", "running", "completed"])
        ),
        Some(Payload::SkillMpUpdate(u)) => format!(
            "skill {} {}",
            u.package_name,
            status(u.status, &["unknown", "installed", "deleted"])
        ),
        Some(Payload::RequestError(e)) => format!("error: {}", e.error_message),
        None => "empty".to_owned(),
    };
    format!("{body} [{}]", m.request_id.as_deref().unwrap_or("-"))
}

fn status(value: i32, names: &[&str]) -> String {
    names
        .get(usize::try_from(value).unwrap_or(0))
        .copied()
        .unwrap_or("?")
        .to_owned()
}

fn is_turn_completed(m: &pb::ClientMessage) -> bool {
    matches!(&m.payload, Some(Payload::TurnUpdate(u)) if u.status == pb::TurnStatus::Completed as i32)
}

fn item(m: &pb::ClientMessage) -> Option<&pb::ItemUpdate> {
    match &m.payload {
        Some(Payload::ItemUpdate(u)) => Some(u),
        _ => None,
    }
}

/// A shell step that prints `ready` and then blocks until the test writes the fifo.
fn blocked_shell(fifo: &std::path::Path) -> Step {
    Step::tool_call(
        "shell",
        json!({"command": format!("echo ready; cat {}", fifo.display())}),
    )
}

/// Lets the blocked command finish. Opening a fifo blocks until its reader
/// opens it, so it is written off the runtime's threads.
async fn release(fifo: &std::path::Path) {
    let fifo = fifo.to_owned();
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"))
        .await
        .unwrap()
        .unwrap();
}

fn make_fifo(path: &std::path::Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

#[tokio::test]
async fn a_message_runs_a_turn_and_every_update_answers_its_request() {
    let mut rig = Rig::start(vec![
        Step::tool_call("shell", json!({"command": "echo hello from the runner"})),
        Step::text("All done."),
    ])
    .await;
    let mut conn = rig.plane.accept().await;

    // Registration came first, with the token, under the URL's path prefix.
    let registrations = rig.plane.registrations();
    assert_eq!(registrations.len(), 1);
    assert_eq!(
        registrations[0].authorization.as_deref(),
        Some("Bearer runner-secret")
    );
    let sdks = &registrations[0].request.agent_sdks;
    assert_eq!(sdks.len(), 1);
    assert_eq!(sdks[0].name, "gantry");
    assert!(!sdks[0].models.is_empty(), "the default model at least");

    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "say hello", false)).await;
    let updates = conn.until(is_turn_completed).await;
    let kinds: Vec<String> = updates.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "turn running [m1]",
            "USER_MESSAGE running [m1]",
            "USER_MESSAGE completed [m1]",
            "COMMAND_EXECUTION running [m1]",
            "COMMAND_EXECUTION completed [m1]",
            "AGENT_MESSAGE running [m1]",
            "AGENT_MESSAGE completed [m1]",
            "turn completed [m1]",
        ]
    );
    let Some(Payload::TurnUpdate(started)) = &updates[0].payload else {
        unreachable!()
    };
    let Some(Payload::TurnUpdate(ended)) = &updates[7].payload else {
        unreachable!()
    };
    assert_eq!(started.sdk_turn_id, ended.sdk_turn_id);
    let user = item(&updates[2]).unwrap();
    assert_eq!(user.text.as_deref(), Some("say hello"));
    let command = item(&updates[4])
        .unwrap()
        .command_execution_item
        .clone()
        .unwrap();
    assert_eq!(command.command, "echo hello from the runner");
    assert!(
        command
            .output
            .unwrap_or_default()
            .contains("hello from the runner")
    );
    assert!(command.cwd.ends_with("/workspaces/t1"), "{}", command.cwd);
    assert!(
        command.process_id.parse::<u32>().is_ok(),
        "{}",
        command.process_id
    );
    // Said running once its process exists, with the pid it ends with.
    let running = item(&updates[3])
        .unwrap()
        .command_execution_item
        .clone()
        .unwrap();
    assert_eq!(running.process_id, command.process_id);
    assert_eq!(
        running.output, None,
        "nothing ran yet when it was said running"
    );
    let answer = item(&updates[6]).unwrap();
    assert_eq!(answer.text.as_deref(), Some("All done."));
    // Items keep their ids from running to completed.
    assert_eq!(
        item(&updates[3]).unwrap().sdk_item_id,
        item(&updates[4]).unwrap().sdk_item_id
    );

    // The thread works in its own directory.
    assert!(rig.dir.path().join("workspaces/t1").is_dir());
    rig.stop.cancel();
    assert!(rig.runner.await.unwrap().is_ok());
}

#[tokio::test]
async fn a_running_turn_is_steered_only_when_allowed() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let mut rig = Rig::start(vec![blocked_shell(&fifo), Step::text("steered")]).await;
    let mut conn = rig.plane.accept().await;
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "build", false)).await;
    conn.until(|m| {
        item(m).is_some_and(|i| {
            i.status == pb::ItemStatus::Running as i32
                && i.item_type == pb::ItemType::CommandExecution as i32
        })
    })
    .await;

    conn.send("m2", message(&thread, "also test", false)).await;
    let refused = conn.next().await;
    assert!(
        kind(&refused).starts_with("error: turn "),
        "{}",
        kind(&refused)
    );
    assert!(kind(&refused).contains("allow_steer") && kind(&refused).ends_with("[m2]"));

    conn.send("m3", message(&thread, "also test", true)).await;
    assert_eq!(kind(&conn.next().await), "turn running [m3]");

    // The steer enters the turn once the command is done.
    release(&fifo).await;
    let rest: Vec<String> = conn
        .until(is_turn_completed)
        .await
        .iter()
        .map(kind)
        .collect();
    assert!(
        rest.contains(&"USER_MESSAGE completed [m3]".to_owned()),
        "{rest:?}"
    );
    assert_eq!(rest.last().map(String::as_str), Some("turn completed [m1]"));
    // The model saw the steer before its next request; one turn in all.
    let last = rig.llm.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "also test");
    assert_eq!(
        rig.engine
            .threads()
            .read(&thread.as_str().into())
            .await
            .unwrap()
            .turns
            .len(),
        1
    );
}

#[tokio::test]
async fn a_request_sent_again_has_no_second_effect() {
    let mut rig = Rig::start(vec![Step::text("once")]).await;
    let mut conn = rig.plane.accept().await;
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "hi", false)).await;
    conn.until(is_turn_completed).await;

    conn.send("a-req", create_agent("a1", "gantry")).await;
    assert_eq!(kind(&conn.next().await), "agent a1 ready [a-req]");
    conn.send("t1", create_thread("a1", "test-model")).await;
    assert_eq!(kind(&conn.next().await), "thread t1 ready [t1]");
    conn.send("m1", message(&thread, "hi", false)).await;
    assert_eq!(kind(&conn.next().await), "turn completed [m1]");

    let page = rig
        .engine
        .threads()
        .list(&gantry_core::ThreadQuery::default())
        .await
        .unwrap();
    assert_eq!(page.threads.len(), 1, "one thread");
    assert_eq!(rig.llm.requests().len(), 1, "one model call");
    assert_eq!(
        rig.engine
            .threads()
            .read(&"t1".into())
            .await
            .unwrap()
            .turns
            .len(),
        1
    );
}

#[tokio::test]
async fn a_request_id_naming_a_directory_never_moves_a_workspace() {
    let mut rig = Rig::start(vec![]).await;
    let mut conn = rig.plane.accept().await;
    conn.send("a-req", create_agent("a1", "gantry")).await;
    assert_eq!(kind(&conn.next().await), "agent a1 ready [a-req]");
    for request in ["..", "."] {
        conn.send(request, create_thread("a1", "test-model")).await;
        let reply = kind(&conn.next().await);
        assert!(
            reply.starts_with("thread ") && reply.ends_with(&format!("ready [{request}]")),
            "{reply}"
        );
    }
    let page = rig
        .engine
        .threads()
        .list(&gantry_core::ThreadQuery::default())
        .await
        .unwrap();
    assert_eq!(page.threads.len(), 2);
    let root = std::fs::canonicalize(rig.dir.path().join("workspaces")).unwrap();
    for thread in page.threads {
        assert!(
            thread.id.as_str() != ".." && thread.id.as_str() != ".",
            "a request id that is a directory name is not a thread id"
        );
        let cwd = std::fs::canonicalize(&thread.cwd).unwrap();
        assert_eq!(cwd.parent(), Some(root.as_path()), "{}", cwd.display());
    }
}

#[tokio::test]
async fn broken_or_impossible_requests_are_refused_with_the_reason() {
    let mut rig = Rig::start(vec![]).await;
    let mut conn = rig.plane.accept().await;
    conn.send("r1", create_thread("a1", "")).await;
    assert_eq!(
        kind(&conn.next().await),
        "error: invalid create_thread_request.model: must not be empty [r1]"
    );
    conn.send("r2", create_agent("a1", "codex")).await;
    let unknown_sdk = kind(&conn.next().await);
    assert!(
        unknown_sdk.contains("unknown agent sdk `codex`"),
        "{unknown_sdk}"
    );
    conn.send("r3", create_thread("nobody", "test-model")).await;
    let unknown_agent = kind(&conn.next().await);
    assert!(
        unknown_agent.starts_with("error: ") && unknown_agent.contains("nobody"),
        "{unknown_agent}"
    );
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send(
        "r4",
        Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
            agent_id: "someone-else".into(),
            thread_id: thread.clone(),
            text: "hi".into(),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        kind(&conn.next().await),
        "error: thread t1 does not belong to agent someone-else [r4]"
    );
    // Deleting: the thread, then messages to it are refused; the agent.
    conn.send(
        "r5",
        Request::DeleteThreadRequest(pb::DeleteThreadRequest {
            agent_id: "a1".into(),
            thread_id: thread.clone(),
        }),
    )
    .await;
    assert_eq!(kind(&conn.next().await), "thread t1 deleted [r5]");
    conn.send("r6", message(&thread, "still there?", false))
        .await;
    assert!(
        kind(&conn.next().await).contains("archived"),
        "messages to a deleted thread are refused"
    );
    conn.send(
        "r7",
        Request::DeleteAgentRequest(pb::DeleteAgentRequest {
            agent_id: "a1".into(),
        }),
    )
    .await;
    assert_eq!(kind(&conn.next().await), "agent a1 deleted [r7]");
    assert!(rig.llm.requests().is_empty());
}

#[tokio::test]
async fn skill_packages_install_into_the_agent() {
    let mut rig = Rig::start(vec![]).await;
    let mut conn = rig.plane.accept().await;
    rig.agent_and_thread(&mut conn).await;
    let package = rig.dir.path().join("pkg/reviewer");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("SKILL.md"),
        "---\nname: reviewer\ndescription: Reviews diffs\n---\nRead the diff first.\n",
    )
    .unwrap();
    let install = |name: String| {
        Request::InstallSkillsMpRequest(pb::InstallSkillsMpRequest {
            agent_id: "a1".into(),
            package_name: name,
        })
    };
    let coordinate = package.display().to_string();
    conn.send("s1", install(coordinate.clone())).await;
    assert_eq!(
        kind(&conn.next().await),
        format!("skill {coordinate} installed [s1]")
    );
    conn.send("s2", install("/no/such/package".into())).await;
    let refused = kind(&conn.next().await);
    assert!(
        refused.starts_with("error: ") && refused.ends_with("[s2]"),
        "{refused}"
    );
    let skills_dir = rig.engine.agents().skills_dir(&"a1".into()).unwrap();
    assert!(skills_dir.join("reviewer/SKILL.md").is_file());
}

#[tokio::test]
async fn after_the_channel_breaks_the_runner_reconnects_and_reports_the_rest_of_the_turn() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let mut rig = Rig::start(vec![
        blocked_shell(&fifo),
        Step::text("finished while you were away"),
    ])
    .await;
    let mut conn = rig.plane.accept().await;
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "long job", false)).await;
    conn.until(|m| item(m).is_some_and(|i| i.item_type == pb::ItemType::CommandExecution as i32))
        .await;

    // The control plane goes away; the turn finishes while it is down.
    rig.plane.set_up(false);
    conn.break_off().await;
    release(&fifo).await;
    let thread_id: gantry_types::ThreadId = thread.as_str().into();
    let turn = rig.engine.threads().read(&thread_id).await.unwrap().turns[0]
        .turn
        .id
        .clone();
    rig.engine.turns().wait(&thread_id, &turn).await.unwrap();

    // Back up: the runner registers again and says what happened.
    rig.plane.set_up(true);
    let mut conn = rig.plane.accept().await;
    let updates = conn.until(is_turn_completed).await;
    let answer = updates
        .iter()
        .filter_map(item)
        .find(|i| {
            i.item_type == pb::ItemType::AgentMessage as i32
                && i.status == pb::ItemStatus::Completed as i32
        })
        .expect("the final answer was reported");
    assert_eq!(answer.text.as_deref(), Some("finished while you were away"));
    // Updates of the turn answer its request (replies said again after the
    // reconnect answer theirs).
    assert!(
        updates
            .iter()
            .filter(|m| matches!(
                m.payload,
                Some(Payload::TurnUpdate(_) | Payload::ItemUpdate(_))
            ))
            .all(|m| m.request_id.as_deref() == Some("m1"))
    );
    assert!(rig.plane.registrations().len() >= 2, "registered again");
}

#[tokio::test]
async fn when_its_replica_goes_away_the_runner_moves_to_the_next_and_reports_what_ran_meanwhile() {
    // Outside the temp dir: sandboxed commands see a private /tmp.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    let fifo = dir.path().join("gate");
    make_fifo(&fifo);
    let llm = MockLlm::start(Script::new(vec![
        blocked_shell(&fifo),
        Step::text("finished on the other replica"),
    ]))
    .unwrap();
    let first = FakePlane::start().await;
    let mut second = FakePlane::start().await;
    let data = dir.path().join("runner");
    let (engine, stop, runner) = start_runner(&first, &[&second], &llm, &data, TOKEN).await;
    let mut first = first;
    let mut conn = first.accept().await;
    conn.send("a-req", create_agent("a1", "gantry")).await;
    assert_eq!(kind(&conn.next().await), "agent a1 ready [a-req]");
    conn.send("t1", create_thread("a1", "test-model")).await;
    assert_eq!(kind(&conn.next().await), "thread t1 ready [t1]");
    conn.send("m1", message("t1", "long job", false)).await;
    conn.until(|m| item(m).is_some_and(|i| i.item_type == pb::ItemType::CommandExecution as i32))
        .await;

    // The first replica dies for good; the turn goes on.
    first.set_up(false);
    conn.break_off().await;
    release(&fifo).await;

    // The runner is on the second one, and says how the turn went on.
    let mut conn = second.accept().await;
    let updates = conn.until(is_turn_completed).await;
    let answer = updates
        .iter()
        .filter_map(item)
        .find(|i| {
            i.item_type == pb::ItemType::AgentMessage as i32
                && i.status == pb::ItemStatus::Completed as i32
        })
        .expect("the final answer was reported to the second replica");
    assert_eq!(
        answer.text.as_deref(),
        Some("finished on the other replica")
    );
    assert!(
        updates
            .iter()
            .filter(|m| matches!(
                m.payload,
                Some(Payload::TurnUpdate(_) | Payload::ItemUpdate(_))
            ))
            .all(|m| m.request_id.as_deref() == Some("m1"))
    );
    assert_eq!(second.registrations().len(), 1);
    stop.cancel();
    runner.await.unwrap().unwrap();
    engine.shutdown().await.expect("events stored");
}

#[tokio::test]
async fn an_unknown_token_stops_the_runner_with_a_clear_error() {
    let rig = Rig::start_with_token(vec![], "wrong").await;
    let err = tokio::time::timeout(Duration::from_secs(20), rig.runner)
        .await
        .expect("the runner gave up")
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("refused this runner"), "{err}");
    assert!(err.to_string().contains("check the token"), "{err}");
}

#[tokio::test]
async fn git_commands_get_an_installation_token_and_others_do_not() {
    let mut rig = Rig::start(vec![
        Step::tool_call(
            "shell",
            json!({"command": "git config --get http.https://github.com/.extraheader; echo gh=${#GH_TOKEN}"}),
        ),
        Step::tool_call("shell", json!({"command": "echo plain=${#GH_TOKEN}"})),
        Step::text("ok"),
    ])
    .await;
    rig.plane.set_github(vec![(7, "ghs_installation7".into())]);
    let mut conn = rig.plane.accept().await;
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "push", false)).await;
    let updates = conn.until(is_turn_completed).await;
    let outputs: Vec<String> = updates
        .iter()
        .filter_map(item)
        .filter(|i| i.status == pb::ItemStatus::Completed as i32)
        .filter_map(|i| i.command_execution_item.as_ref()?.output.clone())
        .collect();
    use base64::Engine as _;
    let basic =
        base64::engine::general_purpose::STANDARD.encode("x-access-token:ghs_installation7");
    assert_eq!(outputs.len(), 2);
    assert!(
        outputs[0].contains(&format!("AUTHORIZATION: basic {basic}")),
        "{}",
        outputs[0]
    );
    assert!(outputs[0].contains("gh=17"), "{}", outputs[0]);
    assert!(outputs[1].contains("plain=0"), "{}", outputs[1]);
}

#[tokio::test]
async fn a_restarted_runner_says_where_the_turns_it_left_ended() {
    let mut rig = Rig::start(vec![Step::tool_call(
        "shell",
        json!({"command": "while [ ! -e release ]; do sleep 0.05; done"}),
    )])
    .await;
    let mut conn = rig.plane.accept().await;
    let thread = rig.agent_and_thread(&mut conn).await;
    conn.send("m1", message(&thread, "wait for it", false))
        .await;
    conn.until(|m| item(m).is_some_and(|i| i.item_type == pb::ItemType::CommandExecution as i32))
        .await;

    // The runner stops mid-turn (the turn ends interrupted, unreported)
    // and comes back on the same data.
    rig.restart_runner().await;
    let mut conn = rig.plane.accept().await;
    let restated = conn.until(is_turn_completed).await;
    let kinds: Vec<String> = restated.iter().map(kind).collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("turn completed [m1]"),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"COMMAND_EXECUTION completed [m1]".to_owned()),
        "the interrupted command is reported ended: {kinds:?}"
    );
    // And the thread is served as before.
    conn.send("again", message(&thread, "still there?", false))
        .await;
    let reply = conn.next().await;
    assert_eq!(kind(&reply), "turn running [again]");
}

#[tokio::test]
async fn every_field_constraint_of_every_request_is_enforced_by_name() {
    let mut rig = Rig::start(vec![]).await;
    let mut conn = rig.plane.accept().await;
    rig.agent_and_thread(&mut conn).await;
    let agent = || "a1".to_owned();
    let cases: Vec<(&str, Request)> = vec![
        (
            "create_agent_request.agent_id",
            Request::CreateAgentRequest(pb::CreateAgentRequest {
                agent_id: String::new(),
                agent_sdk: "gantry".into(),
            }),
        ),
        (
            "create_agent_request.agent_sdk",
            Request::CreateAgentRequest(pb::CreateAgentRequest {
                agent_id: "a2".into(),
                agent_sdk: String::new(),
            }),
        ),
        (
            "delete_agent_request.agent_id",
            Request::DeleteAgentRequest(pb::DeleteAgentRequest::default()),
        ),
        (
            "create_thread_request.agent_id",
            Request::CreateThreadRequest(pb::CreateThreadRequest {
                agent_id: String::new(),
                model: "test-model".into(),
                reasoning_level: None,
            }),
        ),
        (
            "create_thread_request.model",
            Request::CreateThreadRequest(pb::CreateThreadRequest {
                agent_id: agent(),
                model: String::new(),
                reasoning_level: None,
            }),
        ),
        (
            "delete_thread_request.agent_id",
            Request::DeleteThreadRequest(pb::DeleteThreadRequest {
                agent_id: String::new(),
                thread_id: "t1".into(),
            }),
        ),
        (
            "delete_thread_request.thread_id",
            Request::DeleteThreadRequest(pb::DeleteThreadRequest {
                agent_id: agent(),
                thread_id: String::new(),
            }),
        ),
        (
            "create_user_message_request.agent_id",
            Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
                thread_id: "t1".into(),
                text: "hi".into(),
                ..Default::default()
            }),
        ),
        (
            "create_user_message_request.thread_id",
            Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
                agent_id: agent(),
                text: "hi".into(),
                ..Default::default()
            }),
        ),
        (
            "create_user_message_request.text",
            Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
                agent_id: agent(),
                thread_id: "t1".into(),
                ..Default::default()
            }),
        ),
        (
            "install_skills_mp_request.agent_id",
            Request::InstallSkillsMpRequest(pb::InstallSkillsMpRequest {
                agent_id: String::new(),
                package_name: "/pkg".into(),
            }),
        ),
        (
            "install_skills_mp_request.package_name",
            Request::InstallSkillsMpRequest(pb::InstallSkillsMpRequest {
                agent_id: agent(),
                package_name: String::new(),
            }),
        ),
    ];
    for (n, (field, request)) in cases.into_iter().enumerate() {
        let id = format!("bad-{n}");
        conn.send(&id, request).await;
        assert_eq!(
            kind(&conn.next().await),
            format!("error: invalid {field}: must not be empty [{id}]")
        );
    }
    // None of them was carried out.
    assert_eq!(rig.engine.agents().list().await.unwrap().len(), 1);
    let thread = rig.engine.threads().read(&"t1".into()).await.unwrap();
    assert!(!thread.thread.archived && thread.turns.is_empty());
    assert!(rig.llm.requests().is_empty());
}

#[tokio::test]
async fn a_runner_refused_as_already_connected_waits_at_least_a_second_between_tries() {
    let mut plane = FakePlane::start().await;
    // Another runner holds this token's channel, twice over; then it is gone.
    plane.refuse_channels(2);
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    // The runner's own backoff (20 ms up) would retry far sooner.
    let (_engine, stop, runner) = start_runner(&plane, &[], &llm, dir.path(), TOKEN).await;

    let _conn = plane.accept().await;
    let attempts = plane.channel_attempts();
    assert_eq!(attempts.len(), 3, "two refused, then in");
    for pair in attempts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
    }
    stop.cancel();
    runner.await.unwrap().unwrap();
}
