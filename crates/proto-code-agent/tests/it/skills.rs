//! Skills over the wire: what the server workspace offers (ListSkills
//! without a session, GetClaudeCodeSkills), loading and unloading in a
//! session (by name and inline), what the model then gets, and the errors.

use crate::common;

use std::path::Path;

use common::{Server, guard};
use gantry_core::{IfBusy, Notification};
use gantry_testkit::Step;
use gantry_types::{EventPayload, ThreadId};
use proto_code_agent::pb;
use tonic::Code;

/// Writes `<workspace>/<dir>/<name>/SKILL.md`.
fn write_skill(workspace: &Path, dir: &str, name: &str, front_matter: &str, body: &str) {
    let folder = workspace.join(dir).join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\n{front_matter}---\n{body}\n"),
    )
    .unwrap();
}

/// A workspace with two skills: `gh-helper` (model-invocable, allows the
/// `gh` CLI and reading) and `release` (for users only).
fn workspace_with_skills(s: &Server) {
    let ws = s.workspace();
    write_skill(
        &ws,
        ".gantry/skills",
        "gh-helper",
        "description: Use the GitHub CLI\nallowed-tools: Bash(gh:*), Read\n",
        "Run gh pr list first.",
    );
    write_skill(
        &ws,
        ".claude/skills",
        "release",
        "description: Cut a release\nallowed-tools: [\"Bash(git tag:*)\"]\ndisable-model-invocation: true\n",
        "Tag the release as vX.Y.Z.",
    );
}

async fn list(s: &mut Server, session: Option<&str>) -> Vec<pb::Skill> {
    s.client
        .list_skills(pb::ListSkillsRequest {
            session_id: session.map(str::to_owned),
        })
        .await
        .expect("list skills")
        .into_inner()
        .skills
}

async fn load(
    s: &mut Server,
    session: &str,
    name: &str,
    content: Option<&str>,
) -> Result<pb::LoadSkillResponse, tonic::Status> {
    s.client
        .load_skill(pb::LoadSkillRequest {
            session_id: session.into(),
            skill_name: name.into(),
            skill_content: content.map(str::to_owned),
        })
        .await
        .map(|r| r.into_inner())
}

async fn unload(
    s: &mut Server,
    session: &str,
    name: &str,
) -> Result<pb::UnloadSkillResponse, tonic::Status> {
    s.client
        .unload_skill(pb::UnloadSkillRequest {
            session_id: session.into(),
            skill_name: name.into(),
        })
        .await
        .map(|r| r.into_inner())
}

/// Runs a turn of `session` through the engine and waits for its end.
async fn run_turn(s: &Server, session: &str, text: &str) {
    let thread = ThreadId::from(session);
    let from = s
        .engine
        .threads()
        .read(&thread)
        .await
        .unwrap()
        .thread
        .last_seq
        + 1;
    let mut sub = s.engine.feeds().subscribe(&thread, from).await.unwrap();
    s.engine
        .turns()
        .send(&thread, text, IfBusy::Reject)
        .await
        .unwrap();
    guard("the turn to end", async {
        while let Some(n) = sub.next().await {
            if let Notification::Event(e) = n
                && matches!(e.payload, EventPayload::TurnCompleted { .. })
            {
                return;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_workspace_skills_are_listed_and_read_whole() {
    let mut s = Server::start(vec![]).await;
    workspace_with_skills(&s);

    let listed = list(&mut s, None).await;
    let gh = listed
        .iter()
        .find(|k| k.name == "gh-helper")
        .expect("gh-helper listed");
    assert_eq!(gh.description, "Use the GitHub CLI");
    assert_eq!(gh.allowed_tools.as_deref(), Some("Bash(gh:*), Read"));
    assert_eq!(gh.metadata["source"], "workspace");
    assert_eq!(gh.metadata["model_invocable"], "true");
    assert!(
        !gh.metadata.contains_key("loaded"),
        "no session, nothing loaded"
    );
    let release = listed
        .iter()
        .find(|k| k.name == "release")
        .expect("release listed");
    assert_eq!(release.metadata["source"], "claude");
    assert_eq!(release.metadata["model_invocable"], "false");

    let all = s
        .client
        .get_claude_code_skills(pb::GetClaudeCodeSkillsRequest { name: None })
        .await
        .unwrap()
        .into_inner()
        .skills;
    assert!(all.iter().any(|k| k.name == "gh-helper") && all.iter().any(|k| k.name == "release"));
    let one = s
        .client
        .get_claude_code_skills(pb::GetClaudeCodeSkillsRequest {
            name: Some("release".into()),
        })
        .await
        .unwrap()
        .into_inner()
        .skills;
    assert_eq!(
        one,
        [pb::ClaudeCodeSkill {
            name: "release".into(),
            description: "Cut a release".into(),
            allowed_tools: Some("Bash(git tag:*)".into()),
            disable_model_invocation: true,
            content: "Tag the release as vX.Y.Z.".into(),
        }]
    );
    let err = s
        .client
        .get_claude_code_skills(pb::GetClaudeCodeSkillsRequest {
            name: Some("nope".into()),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(
        err.message().contains("gh-helper"),
        "names what exists: {err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_skill_reaches_the_model_until_unloaded() {
    let mut s = Server::start_trusted(vec![Step::text("tagged"), Step::text("done")]).await;
    workspace_with_skills(&s);
    let session = s.session().await;
    let before = list(&mut s, Some(&session)).await;
    assert!(
        before
            .iter()
            .all(|k| k.metadata["loaded"] == "false"
                && k.metadata["allowed_tools_granted"] == "true"),
        "{before:?}"
    );

    let loaded = load(&mut s, &session, "release", None).await.unwrap();
    assert!(loaded.success);
    assert_eq!(loaded.tool_names, ["Bash(git tag:*)"]);
    let listed = list(&mut s, Some(&session)).await;
    let release = listed.iter().find(|k| k.name == "release").unwrap();
    assert_eq!(release.metadata["loaded"], "true");

    run_turn(&s, &session, "cut 1.2.0").await;
    let first = s.llm.requests()[0].body.to_string();
    assert!(first.contains("Tag the release as vX.Y.Z."), "{first}");

    let unloaded = unload(&mut s, &session, "release").await.unwrap();
    assert!(unloaded.success);
    assert_eq!(unloaded.removed_tools, ["Bash(git tag:*)"]);
    run_turn(&s, &session, "and now?").await;
    let second = s.llm.requests()[1].body.to_string();
    assert!(!second.contains("Tag the release as vX.Y.Z."), "{second}");

    let again = unload(&mut s, &session, "release").await.unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition, "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_skill_loads_without_its_allowed_tools_in_an_untrusted_workspace() {
    let mut s = Server::start(vec![Step::text("tagged")]).await;
    workspace_with_skills(&s);
    let session = s.session().await;
    let loaded = load(&mut s, &session, "release", None).await.unwrap();
    assert!(loaded.success);
    assert!(loaded.tool_names.is_empty(), "{:?}", loaded.tool_names);
    let listed = list(&mut s, Some(&session)).await;
    let release = listed.iter().find(|k| k.name == "release").unwrap();
    assert_eq!(release.metadata["allowed_tools_granted"], "false");
    assert_eq!(release.allowed_tools.as_deref(), Some("Bash(git tag:*)"));

    // The instructions still reach the model, saying the rules are ignored.
    run_turn(&s, &session, "cut 1.2.0").await;
    let first = s.llm.requests()[0].body.to_string();
    assert!(first.contains("Tag the release as vX.Y.Z."), "{first}");
    assert!(
        first.contains("allowed-tools of workspace skill `release` ignored"),
        "{first}"
    );

    let unloaded = unload(&mut s, &session, "release").await.unwrap();
    assert!(unloaded.removed_tools.is_empty(), "{unloaded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_skill_is_added_loaded_and_dropped_on_unload() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let text = "---\nname: lint-fixer\ndescription: Fix lints\nallowed-tools: Bash(cargo clippy:*)\n---\nRun clippy, fix, repeat.\n";
    let loaded = load(&mut s, &session, "", Some(text)).await.unwrap();
    assert!(loaded.success);
    assert_eq!(loaded.tool_names, ["Bash(cargo clippy:*)"]);
    let listed = list(&mut s, Some(&session)).await;
    let inline = listed
        .iter()
        .find(|k| k.name == "lint-fixer")
        .expect("listed");
    assert_eq!(inline.metadata["source"], "inline");
    assert_eq!(inline.metadata["loaded"], "true");

    let removed = unload(&mut s, &session, "lint-fixer").await.unwrap();
    assert_eq!(removed.removed_tools, ["Bash(cargo clippy:*)"]);
    assert!(
        list(&mut s, Some(&session))
            .await
            .iter()
            .all(|k| k.name != "lint-fixer"),
        "an inline skill has nothing to come back from"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skill_errors_name_the_field_or_the_skill() {
    let mut s = Server::start(vec![]).await;
    workspace_with_skills(&s);
    let session = s.session().await;

    let err = load(&mut s, &session, "nope", None).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(err.message().contains("gh-helper"), "{err:?}");
    let err = unload(&mut s, &session, "nope").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = load(&mut s, &session, "", None).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("skill_name:"), "{err:?}");
    let err = load(&mut s, &session, "", Some("no front matter"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("skill_content:"), "{err:?}");
    let text = "---\nname: a\ndescription: b\n---\nbody\n";
    let err = load(&mut s, &session, "other", Some(text))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("skill_name:"), "{err:?}");
    assert!(
        list(&mut s, Some(&session))
            .await
            .iter()
            .all(|k| k.name != "a"),
        "nothing was loaded"
    );

    let err = load(&mut s, "missing", "gh-helper", None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = s
        .client
        .list_skills(pb::ListSkillsRequest {
            session_id: Some("missing".into()),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
}
