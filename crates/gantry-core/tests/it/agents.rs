//! Agents end to end: persisted configurations whose threads inherit their
//! defaults, and skill packages installed into an agent's skills dir,
//! reported on the engine-wide event stream and offered to its threads.

use crate::common;

use std::path::Path;

use common::*;
use gantry_core::{
    AgentSpec, CreateThread, EngineConfig, EngineError, EngineEventKind, EngineEventNotice,
    EngineEvents, IfBusy,
};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_tools::skills::{SkillPackageStatus, SkillSource};
use gantry_types::{AgentId, TurnStatus};
use serde_json::json;

const SKILL: &str = "---\nname: release-notes\ndescription: Writes release notes.\n---\nList the merged PRs, newest first.\n";

fn config_with_data(data: &Path) -> EngineConfig {
    EngineConfig {
        data_dir: Some(data.to_path_buf()),
        ..EngineConfig::default()
    }
}

fn spec(id: &str) -> AgentSpec {
    AgentSpec {
        id: Some(AgentId::from(id)),
        name: Some("Release bot".into()),
        model: Some("agent-model".into()),
        instructions: Some("You write release notes.".into()),
        ..Default::default()
    }
}

/// A package folder holding one skill.
fn package(root: &Path) -> std::path::PathBuf {
    let pkg = root.join("pkg/release-notes");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("SKILL.md"), SKILL).unwrap();
    root.join("pkg")
}

async fn next_skill_event(events: &mut EngineEvents) -> gantry_tools::skills::SkillPackageUpdate {
    loop {
        match events.recv().await {
            Some(EngineEventNotice::Event(e)) => {
                if let EngineEventKind::SkillPackage(update) = e.kind {
                    return update;
                }
            }
            other => panic!("engine events ended: {other:?}"),
        }
    }
}

#[tokio::test]
async fn agents_persist_and_their_threads_inherit_model_and_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;

    let mut events = engine.feeds().engine_events();
    let agent = engine.agents().save(spec("release-bot")).await.unwrap();
    assert_eq!(agent.sdk, "gantry");
    match events.recv().await {
        Some(EngineEventNotice::Event(e)) => {
            assert_eq!(
                e.kind,
                EngineEventKind::AgentSaved {
                    agent: agent.clone()
                }
            )
        }
        other => panic!("no agent event: {other:?}"),
    }

    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: ws.clone(),
            agent: Some(agent.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(thread.model, "agent-model");
    assert_eq!(
        thread.instructions.as_deref(),
        Some("You write release notes.")
    );
    assert_eq!(thread.agent_id.as_ref(), Some(&agent.id));
    // A thread's own choices win over the agent's.
    let own = engine
        .threads()
        .create(CreateThread {
            cwd: ws.clone(),
            model: Some("own-model".into()),
            agent: Some(agent.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(own.model, "own-model");

    // Saving again replaces the agent but keeps its creation time.
    let changed = engine
        .agents()
        .save(AgentSpec {
            model: Some("newer-model".into()),
            ..spec("release-bot")
        })
        .await
        .unwrap();
    assert_eq!(changed.created_at, agent.created_at);
    engine.shutdown().await.expect("events stored");
    drop(engine);

    // Agents survive a restart.
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    let agents = engine.agents().list().await.unwrap();
    assert_eq!(agents, vec![changed.clone()]);
    assert_eq!(engine.agents().get(&changed.id).await.unwrap(), changed);

    assert!(engine.agents().delete(&changed.id).await.unwrap());
    assert!(!engine.agents().delete(&changed.id).await.unwrap());
    assert!(matches!(
        engine.agents().get(&changed.id).await,
        Err(EngineError::NotFound { what: "agent", .. })
    ));
    assert!(matches!(
        engine
            .threads()
            .create(CreateThread {
                cwd: ws,
                agent: Some(changed.id.clone()),
                ..Default::default()
            })
            .await,
        Err(EngineError::NotFound { what: "agent", .. })
    ));
}

#[tokio::test]
async fn bad_agent_ids_and_unknown_sdks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    let engine = engine_at(dir.path(), &llm, EngineConfig::default()).await;
    for id in ["../escape", "", "a/b", ".."] {
        let err = engine.agents().save(spec(id)).await.unwrap_err();
        assert!(
            matches!(&err, EngineError::InvalidInput(m) if m.contains("agent id")),
            "{id:?}: {err}"
        );
    }
    let err = engine
        .agents()
        .save(AgentSpec {
            sdk: Some("claude-code".into()),
            ..spec("a1")
        })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown agent sdk `claude-code`"),
        "{err}"
    );
    assert!(engine.agents().list().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_installed_skill_package_reaches_the_agents_live_thread_and_the_model() {
    let data = tempfile::tempdir().unwrap();
    let h = Harness::with_config(
        vec![
            Step::tool_call("skill", json!({"name": "release-notes"})),
            Step::text("notes written"),
        ],
        config_with_data(data.path()),
    )
    .await;
    let agent = h.engine.agents().save(spec("release-bot")).await.unwrap();
    let thread = h
        .engine
        .threads()
        .create(CreateThread {
            cwd: h.workspace(),
            model: Some("test-model".into()),
            agent: Some(agent.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    assert!(h.engine.skills().list(&thread).await.unwrap().is_empty());

    let mut events = h.engine.feeds().engine_events();
    let pkg = package(h.dir.path());
    let pkg = pkg.to_str().unwrap();
    let update = h
        .engine
        .agents()
        .install_skill_package(&agent.id, pkg)
        .await
        .unwrap();
    assert_eq!(update.status, SkillPackageStatus::Installed);
    assert_eq!(update.skills, ["release-notes"]);
    assert_eq!(update.agent_id, "release-bot");
    assert_eq!(next_skill_event(&mut events).await, update);
    let installed = h.engine.agents().skills_dir(&agent.id).unwrap();
    assert!(installed.join("release-notes/SKILL.md").is_file());

    // The live thread has it at once, as an installed skill.
    let listed = h.engine.skills().list(&thread).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].source, SkillSource::Installed);

    // The model invokes it and gets its instructions.
    let mut sub = h.engine.feeds().subscribe(&thread, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&thread, "write the notes", IfBusy::Reject)
        .await
        .unwrap();
    assert_eq!(
        turn_status(&until_turn_ends(&mut sub, &turn).await),
        TurnStatus::Completed
    );
    let result = last_tool_result(&h.llm, 1);
    assert!(result.contains("List the merged PRs"), "{result}");

    // Deleting it reports and removes it everywhere.
    let deleted = h
        .engine
        .agents()
        .delete_skill(&agent.id, "release-notes")
        .await
        .unwrap();
    assert_eq!(deleted.status, SkillPackageStatus::Deleted);
    assert_eq!(next_skill_event(&mut events).await, deleted);
    assert!(!installed.join("release-notes").exists());
    assert!(h.engine.skills().list(&thread).await.unwrap().is_empty());
    assert!(matches!(
        h.engine
            .agents()
            .delete_skill(&agent.id, "release-notes")
            .await,
        Err(EngineError::NotFound { what: "skill", .. })
    ));

    // Deleting the agent removes its files.
    h.engine
        .agents()
        .install_skill_package(&agent.id, pkg)
        .await
        .unwrap();
    assert!(h.engine.agents().delete(&agent.id).await.unwrap());
    assert!(!installed.exists());
}

#[tokio::test]
async fn unresolvable_packages_and_engines_without_a_data_dir_get_clear_errors() {
    let data = tempfile::tempdir().unwrap();
    let h = Harness::with_config(vec![], config_with_data(data.path())).await;
    let agent = h.engine.agents().save(spec("a1")).await.unwrap();
    let missing = h.dir.path().join("no-such-package");
    let err = h
        .engine
        .agents()
        .install_skill_package(&agent.id, missing.to_str().unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no-such-package"), "{err}");
    assert!(matches!(
        h.engine
            .agents()
            .install_skill_package(&AgentId::from("nobody"), "x")
            .await,
        Err(EngineError::NotFound { what: "agent", .. })
    ));

    let bare = Harness::new(vec![]).await;
    let agent = bare.engine.agents().save(spec("a1")).await.unwrap();
    let pkg = package(bare.dir.path());
    let err = bare
        .engine
        .agents()
        .install_skill_package(&agent.id, pkg.to_str().unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no data dir"), "{err}");
}
