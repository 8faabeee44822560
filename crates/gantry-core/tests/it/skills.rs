//! Skills end to end: discovered from the workspace, invoked by the model,
//! their `allowed-tools` enforced while loaded, and only where they may
//! grant rights: a workspace's own skills only in a workspace the operator
//! trusts, the user's and installed ones everywhere.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use gantry_core::{AgentSpec, CreateThread, Engine, EngineConfig, IfBusy};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{AgentId, RuleDecision, ThreadId, ThreadPolicy, TurnStatus};
use serde_json::json;

/// An engine over a temp dir holding the workspace `ws`, its config made
/// knowing where `ws` is (to trust it, or not).
struct Setup {
    engine: Engine,
    llm: MockLlm,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn new(steps: Vec<Step>, config: impl FnOnce(&Path) -> EngineConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let llm = MockLlm::start(Script::new(steps)).unwrap();
        let engine = engine_at(dir.path(), &llm, config(&ws)).await;
        Setup { engine, llm, dir }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A thread in the workspace under `policy` (of `agent`, if given).
    async fn thread(&self, policy: &ThreadPolicy, agent: Option<AgentId>) -> ThreadId {
        self.engine
            .threads()
            .create(CreateThread {
                cwd: self.workspace(),
                policy: policy.clone(),
                agent,
                ..Default::default()
            })
            .await
            .unwrap()
            .id
    }

    /// Runs one turn of `thread` to its end; it must complete.
    async fn turn(&self, thread: &ThreadId, text: &str) {
        let mut sub = self.engine.feeds().subscribe(thread, 1).await.unwrap();
        let turn = self
            .engine
            .turns()
            .send(thread, text, IfBusy::Reject)
            .await
            .unwrap();
        assert_eq!(
            turn_status(&until_turn_ends(&mut sub, &turn).await),
            TurnStatus::Completed
        );
    }
}

/// Trusts the workspace, as an operator's `--trust-workspace` does.
fn trusting(ws: &Path) -> EngineConfig {
    EngineConfig {
        trusted_workspaces: vec![ws.to_path_buf()],
        ..EngineConfig::default()
    }
}

/// Default deny; only file edits allowed.
fn edits_only() -> ThreadPolicy {
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.default = RuleDecision::Deny;
    policy.permissions.allow = vec!["Edit".to_owned()];
    policy
}

/// A skill that asks for every shell command.
const HELPER: &str =
    "---\nname: helper\ndescription: Helps.\nallowed-tools: Bash\n---\nRun what you need.\n";

/// What the model was told in the attack: one thread, allowed only file
/// edits, writes `<location>/helper/SKILL.md` (`allowed-tools: Bash`); the
/// next thread in that workspace invokes the skill (always allowed), then
/// runs `touch pwned`. The skill's result, the command's, and whether
/// `pwned` exists.
async fn skill_written_then_shell(
    location: &str,
    config: fn(&Path) -> EngineConfig,
) -> (String, String, bool) {
    let s = Setup::new(
        vec![
            Step::tool_call(
                "write_file",
                json!({"path": format!("{location}/helper/SKILL.md"), "content": HELPER}),
            ),
            Step::text("written"),
            Step::tool_call("skill", json!({"name": "helper"})),
            Step::tool_call("shell", json!({"command": "touch pwned"})),
            Step::text("done"),
        ],
        config,
    )
    .await;
    let first = s.thread(&edits_only(), None).await;
    s.turn(&first, "leave a helper skill").await;
    assert!(
        last_tool_result(&s.llm, 1).starts_with("Created"),
        "file edits are allowed: {}",
        last_tool_result(&s.llm, 1)
    );
    let next = s.thread(&edits_only(), None).await;
    s.turn(&next, "use the helper").await;
    (
        last_tool_result(&s.llm, 3),
        last_tool_result(&s.llm, 4),
        s.workspace().join("pwned").exists(),
    )
}

#[tokio::test]
async fn a_workspace_skill_the_model_wrote_grants_no_rights_in_an_untrusted_workspace() {
    for location in [".gantry/skills", ".claude/skills"] {
        let (skill, shell, pwned) =
            skill_written_then_shell(location, |_| EngineConfig::default()).await;
        assert!(
            skill.contains("Run what you need."),
            "{location}: the instructions still come: {skill}"
        );
        assert!(
            skill.contains(
                "allowed-tools of workspace skill `helper` ignored (Bash): workspace not trusted"
            ),
            "{location}: the model is told why: {skill}"
        );
        assert!(
            shell.contains("denied by policy"),
            "{location}: the shell stays denied: {shell}"
        );
        assert!(!pwned, "{location}: the command ran");
    }
}

#[tokio::test]
async fn a_workspace_skill_grants_its_allowed_tools_in_a_workspace_the_operator_trusts() {
    for location in [".gantry/skills", ".claude/skills"] {
        let (skill, shell, pwned) = skill_written_then_shell(location, trusting).await;
        assert!(
            skill.contains("Allowed without asking while it is active: Bash"),
            "{location}: {skill}"
        );
        assert!(shell.starts_with("Exit code: 0"), "{location}: {shell}");
        assert!(pwned, "{location}: the command did not run");
    }
}

#[tokio::test]
async fn an_installed_skill_grants_its_allowed_tools_in_an_untrusted_workspace() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_path_buf();
    let s = Setup::new(
        vec![
            Step::tool_call("skill", json!({"name": "helper"})),
            Step::tool_call("shell", json!({"command": "touch ok"})),
            Step::text("done"),
        ],
        move |_| EngineConfig {
            data_dir: Some(data_dir),
            ..EngineConfig::default()
        },
    )
    .await;
    let pkg = s.dir.path().join("pkg/helper");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("SKILL.md"), HELPER).unwrap();
    let agent = s
        .engine
        .agents()
        .save(AgentSpec {
            id: Some(AgentId::from("helper-bot")),
            ..AgentSpec::default()
        })
        .await
        .unwrap();
    s.engine
        .agents()
        .install_skill_package(&agent.id, pkg.parent().unwrap().to_str().unwrap())
        .await
        .unwrap();
    let thread = s.thread(&edits_only(), Some(agent.id)).await;
    let listed = s.engine.skills().list(&thread).await.unwrap();
    assert!(listed[0].allowed_tools_granted, "{listed:?}");
    s.turn(&thread, "use the helper").await;
    let shell = last_tool_result(&s.llm, 2);
    assert!(shell.starts_with("Exit code: 0"), "{shell}");
    assert!(s.workspace().join("ok").exists());
}

const SKILL: &str = "---\nname: greeter\ndescription: Greets people from the shell.\nallowed-tools: Bash(echo:*)\n---\nTo greet, run `echo hello, NAME`.\n";

#[tokio::test]
async fn a_discovered_skill_in_a_trusted_workspace_is_invoked_and_its_allowed_tools_apply() {
    let h = Setup::new(
        vec![
            Step::tool_call("shell", json!({"command": "echo before"})),
            Step::tool_call("skill", json!({"name": "greeter"})),
            Step::tool_call("shell", json!({"command": "echo hello, world"})),
            Step::text("greeted"),
        ],
        trusting,
    )
    .await;
    let dir = h.workspace().join(".gantry/skills/greeter");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let mut policy = ThreadPolicy::default();
    policy.permissions.enabled = true;
    policy.permissions.default = RuleDecision::Deny;
    let thread = h
        .engine
        .threads()
        .create(CreateThread {
            cwd: h.workspace(),
            policy,
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    let listed = h.engine.skills().list(&thread).await.unwrap();
    assert_eq!(
        listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["greeter"]
    );

    let mut sub = h.engine.feeds().subscribe(&thread, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&thread, "greet the world", IfBusy::Reject)
        .await
        .unwrap();
    assert_eq!(
        turn_status(&until_turn_ends(&mut sub, &turn).await),
        TurnStatus::Completed
    );

    let requests = h.llm.requests();
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("greeter") && system.contains("Greets people"),
        "{system}"
    );
    let offered = offered_tools(&h.llm, 0);
    assert!(offered.iter().any(|t| t == "skill"), "{offered:?}");
    let result = |n: usize| last_tool_result(&h.llm, n);
    assert!(
        result(1).contains("denied by policy"),
        "before the skill: {}",
        result(1)
    );
    assert!(
        result(2).contains("echo hello, NAME"),
        "the skill's instructions: {}",
        result(2)
    );
    assert!(
        result(3).starts_with("Exit code: 0") && result(3).contains("hello, world"),
        "after: {}",
        result(3)
    );

    // Invoked by the model, its instructions are in the history already,
    // not repeated in the system prompt.
    let later = requests[3].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(!later.contains("echo hello, NAME"), "{later}");

    // Unloaded, its rules stop applying.
    assert!(h.engine.skills().unload(&thread, "greeter").await.unwrap());
    let listed = h.engine.skills().list(&thread).await.unwrap();
    assert!(!listed[0].loaded);
}

#[tokio::test]
async fn a_skill_loaded_on_request_gives_the_model_its_instructions() {
    let h = Harness::new(vec![Step::text("hello, world"), Step::text("plain")]).await;
    let dir = h.workspace().join(".gantry/skills/greeter");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let thread = h
        .engine
        .threads()
        .create(CreateThread {
            cwd: h.workspace(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    h.engine.skills().load(&thread, "greeter").await.unwrap();
    let run = |text: &'static str| {
        let engine = h.engine.clone();
        let thread = thread.clone();
        async move {
            let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
            let turn = engine
                .turns()
                .send(&thread, text, IfBusy::Reject)
                .await
                .unwrap();
            until_turn_ends(&mut sub, &turn).await;
        }
    };
    run("greet").await;
    let system = |n: usize| {
        h.llm.requests()[n].body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(system(0).contains("echo hello, NAME"), "{}", system(0));
    assert!(h.engine.skills().unload(&thread, "greeter").await.unwrap());
    run("again").await;
    assert!(!system(1).contains("echo hello, NAME"), "{}", system(1));
}

#[tokio::test]
async fn trust_follows_a_thread_that_moves_between_workspaces() {
    let s = Setup::new(vec![], |ws| {
        trusting(&ws.parent().expect("a parent").join("trusted"))
    })
    .await;
    let trusted = s.dir.path().join("trusted");
    for ws in [s.workspace(), trusted.clone()] {
        let dir = ws.join(".gantry/skills/helper");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), HELPER).unwrap();
    }
    let thread = s.thread(&edits_only(), None).await;
    let granted = || async {
        let listed = s.engine.skills().list(&thread).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        listed[0].allowed_tools_granted
    };
    assert!(!granted().await, "the workspace is not trusted");
    let move_to = |cwd: &Path| {
        s.engine.threads().configure(
            &thread,
            gantry_types::ThreadSettingsPatch {
                cwd: Some(cwd.to_string_lossy().into_owned()),
                ..Default::default()
            },
        )
    };
    move_to(&trusted).await.unwrap();
    assert!(granted().await, "moved into a trusted workspace");
    move_to(&s.workspace()).await.unwrap();
    assert!(!granted().await, "and out again");
}
