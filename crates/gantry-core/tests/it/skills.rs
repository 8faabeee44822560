//! Skills end to end: discovered from the workspace, invoked by the model,
//! their `allowed-tools` enforced while loaded.

use crate::common;

use common::*;
use gantry_core::{CreateThread, IfBusy};
use gantry_testkit::Step;
use gantry_types::{RuleDecision, ThreadPolicy, TurnStatus};
use serde_json::json;

const SKILL: &str = "---\nname: greeter\ndescription: Greets people from the shell.\nallowed-tools: Bash(echo:*)\n---\nTo greet, run `echo hello, NAME`.\n";

#[tokio::test]
async fn a_discovered_skill_is_invoked_and_its_allowed_tools_apply() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo before"})),
        Step::tool_call("skill", json!({"name": "greeter"})),
        Step::tool_call("shell", json!({"command": "echo hello, world"})),
        Step::text("greeted"),
    ])
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
