//! A turn's checkpoint: the workspace recorded before the turn's first tool
//! that can write, its id in the log, and the files it brings back.

use crate::common;

use common::*;
use gantry_checkpoint::{CheckpointId, CheckpointStore};
use gantry_core::EngineConfig;
use gantry_testkit::Step;
use gantry_types::EventPayload;
use serde_json::json;

#[tokio::test]
async fn a_turn_that_writes_records_a_checkpoint_that_restores_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EngineConfig {
        data_dir: Some(dir.path().join("data")),
        ..EngineConfig::default()
    };
    let h = Harness::with_config(
        vec![
            Step::tool_call(
                "shell",
                json!({"command": "echo new > created.txt && echo after > edit.txt \
                       && rm gone.txt && mv old.txt new.txt && chmod +x run.sh"}),
            ),
            Step::text("Done."),
            Step::tool_call("read_file", json!({"path": "edit.txt"})),
            Step::text("It says after."),
        ],
        config,
    )
    .await;
    let ws = h.workspace();
    std::fs::write(ws.join("edit.txt"), "before\n").expect("file");
    std::fs::write(ws.join("gone.txt"), "doomed\n").expect("file");
    std::fs::write(ws.join("old.txt"), "renamed\n").expect("file");
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\n").expect("file");
    std::fs::write(ws.join("data.bin"), [0u8, 255, 1, 254]).expect("file");
    let before = snapshot(&ws);

    let (turn, seen) = h.run_turn("change the files").await;
    let recorded: Vec<_> = events(&seen)
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::CheckpointRecorded {
                turn_id,
                checkpoint,
            } => Some((turn_id.clone(), checkpoint.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(recorded.len(), 1, "one checkpoint for the turn");
    assert_eq!(recorded[0].0, turn);
    assert_ne!(snapshot(&ws), before);

    // A turn that only reads records none.
    let (_, seen) = h.run_turn("what does edit.txt say?").await;
    assert!(
        !events(&seen)
            .iter()
            .any(|e| matches!(e.payload, EventPayload::CheckpointRecorded { .. }))
    );

    // The view keeps it on its turn, and a restart reads it back.
    let view = h.view().await;
    let on_turn = view.turns[0].checkpoint.clone().expect("on the turn");
    assert_eq!(on_turn, recorded[0].1);
    assert!(view.turns[1].checkpoint.is_none());

    let store_dir = dir
        .path()
        .join("data/checkpoints")
        .join(format!("{}.git", h.thread.id.as_str()));
    let store = CheckpointStore::open(&store_dir, &ws).expect("store");
    let id = CheckpointId::parse(&on_turn.id).expect("an id");
    assert!(store.changed_by_others().expect("check").is_empty());
    store.restore(&id).expect("restore");
    assert_eq!(snapshot(&ws), before);
}

/// Every file of `dir` with its bytes and executable bit.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = e.metadata().expect("meta");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read"),
                meta.permissions().mode() & 0o111 != 0,
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn rewind_restores_the_files_and_continues_the_conversation_from_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EngineConfig {
        data_dir: Some(dir.path().join("data")),
        ..EngineConfig::default()
    };
    let h = Harness::with_config(
        vec![
            Step::tool_call("shell", json!({"command": "echo one > a.txt"})),
            Step::text("One."),
            Step::tool_call(
                "shell",
                json!({"command": "echo two > a.txt && echo b > b.txt"}),
            ),
            Step::text("Two."),
        ],
        config,
    )
    .await;
    let ws = h.workspace();
    h.run_turn("write one").await;
    h.run_turn("write two").await;
    let threads = h.engine.threads();
    let listed = threads.checkpoints(&h.thread.id).await.expect("list");
    assert_eq!(listed.len(), 2);
    let second = listed[1].checkpoint.id.clone();

    // Someone else's file since the agent's last turn: refused, named.
    std::fs::write(ws.join("notes.md"), "mine").expect("user file");
    match threads.rewind(&h.thread.id, &second, false).await {
        Ok(gantry_core::Rewound::Conflicts(files)) => assert_eq!(files, ["notes.md"]),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("a"),
        "two\n"
    );
    std::fs::remove_file(ws.join("notes.md")).expect("rm");

    let rewound = threads
        .rewind(&h.thread.id, &second, false)
        .await
        .expect("rewind");
    let gantry_core::Rewound::Done { thread, .. } = rewound else {
        panic!("expected the rewind done, got {rewound:?}");
    };
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("a"),
        "one\n"
    );
    assert!(!ws.join("b.txt").exists());
    // The conversation continues from before the second turn; the source
    // keeps both, readable as the branch left.
    let continued = threads.read(&thread.id).await.expect("continued");
    assert_eq!(continued.turns.len(), 1);
    // Its store carries on from the source's: the workspace is as the
    // rewind left it, so nothing is someone else's change.
    let next = CheckpointStore::open(
        &dir.path()
            .join("data/checkpoints")
            .join(format!("{}.git", thread.id.as_str())),
        &ws,
    )
    .expect("the continuation's store");
    assert!(next.changed_by_others().expect("check").is_empty());
    std::fs::write(ws.join("late.md"), "mine").expect("user file");
    assert_eq!(
        next.changed_by_others().expect("check"),
        vec![std::path::PathBuf::from("late.md")]
    );
    std::fs::remove_file(ws.join("late.md")).expect("rm");
    assert_eq!(h.view().await.turns.len(), 2);

    // A fork at the first checkpoint: a new directory with its files.
    let first = listed[0].checkpoint.id.clone();
    let fork = threads.fork_at(&h.thread.id, &first).await.expect("fork");
    assert_ne!(fork.cwd, h.thread.cwd);
    let fork_dir = std::path::PathBuf::from(&fork.cwd);
    assert!(fork_dir.is_dir());
    assert!(
        !fork_dir.join("a.txt").exists(),
        "before the first turn wrote"
    );
    assert_eq!(threads.read(&fork.id).await.expect("fork").turns.len(), 0);
    assert!(matches!(
        threads.rewind(&h.thread.id, "not-an-id", true).await,
        Err(gantry_core::EngineError::NotFound { .. })
    ));
}
