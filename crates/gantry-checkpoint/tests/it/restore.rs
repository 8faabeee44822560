//! Rewinding a workspace to a checkpoint, byte for byte.

use std::path::PathBuf;

use gantry_checkpoint::{CheckpointError, CheckpointId};

use crate::support::{Entry, Scratch, chmod, tree};

#[test]
fn restore_undoes_creates_edits_deletes_renames_and_chmods() {
    let s = Scratch::new();
    s.user_git(&["init", "-q"]);
    s.write(".gitignore", "*.log\n");
    s.write("keep.txt", "kept\n");
    s.write("edit.txt", "before\n");
    s.write("delete/me.txt", "doomed\n");
    s.write("old-name.txt", "renamed\n");
    s.write("run.sh", "#!/bin/sh\necho hi\n");
    s.write(
        "image.bin",
        (0..=255u8).cycle().take(70_000).collect::<Vec<_>>(),
    );
    chmod(&s.ws.join("run.sh"), 0o755);
    std::os::unix::fs::symlink("/etc/hostname", s.ws.join("outside")).expect("symlink");
    s.write("debug.log", "ignored, before\n");
    let before = tree(&s.ws);
    let user_git_dir = tree(&s.ws.join(".git"));

    let store = s.store();
    let checkpoint = store.record("turn 1").expect("checkpoint");

    s.write("edit.txt", "after\n");
    s.write("new/dir/created.txt", "new\n");
    std::fs::remove_dir_all(s.ws.join("delete")).expect("delete");
    std::fs::rename(s.ws.join("old-name.txt"), s.ws.join("new-name.txt")).expect("rename");
    chmod(&s.ws.join("run.sh"), 0o644);
    s.write("image.bin", [0u8, 159, 146, 150]);
    std::fs::remove_file(s.ws.join("outside")).expect("unlink");
    std::os::unix::fs::symlink("/etc/passwd", s.ws.join("outside")).expect("symlink");
    s.write("debug.log", "ignored, after\n");

    store.restore(&checkpoint.id).expect("restore");

    let mut expected = before;
    // Ignored files are the user's: untouched by the rewind.
    expected.insert(
        PathBuf::from("debug.log"),
        Entry::File {
            bytes: b"ignored, after\n".to_vec(),
            executable: false,
        },
    );
    assert_eq!(tree(&s.ws), expected);
    assert_eq!(
        std::fs::read_link(s.ws.join("outside")).expect("link"),
        PathBuf::from("/etc/hostname")
    );
    assert_eq!(tree(&s.ws.join(".git")), user_git_dir);
}

#[test]
fn restoring_twice_is_restoring_once() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    s.write("a.txt", "b");
    s.write("b.txt", "b");
    store.restore(&checkpoint.id).expect("restore");
    let once = tree(&s.ws);
    store.restore(&checkpoint.id).expect("again");
    assert_eq!(tree(&s.ws), once);
}

#[test]
fn a_change_not_the_agents_is_named_before_a_rewind() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store = s.store();
    let checkpoint = store.record("turn 1").expect("checkpoint");
    s.write("a.txt", "the agent's edit");
    store.mark_left().expect("turn end");
    assert!(store.changed_by_others().expect("check").is_empty());

    s.write("notes.md", "the user's own file");
    assert_eq!(
        store.changed_by_others().expect("check"),
        vec![PathBuf::from("notes.md")]
    );

    store.restore(&checkpoint.id).expect("forced");
    assert!(store.changed_by_others().expect("check").is_empty());
}

#[test]
fn an_unknown_checkpoint_is_refused_untouched() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store = s.store();
    store.record("turn").expect("checkpoint");
    let before = tree(&s.ws);
    let id = CheckpointId::parse(&"ab".repeat(20)).expect("an id's shape");
    assert!(matches!(
        store.restore(&id),
        Err(CheckpointError::Unknown(_))
    ));
    assert_eq!(tree(&s.ws), before);
    assert!(CheckpointId::parse("--upload-pack=evil").is_none());
    assert!(CheckpointId::parse("HEAD~1").is_none());
}

#[test]
fn a_restore_cut_short_is_finished_from_its_note() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    let at_checkpoint = tree(&s.ws);
    s.write("a.txt", "changed");
    s.write("b.txt", "created");
    // What a crash right after the note, before any file, leaves behind.
    std::fs::write(
        s.store_dir.join("gantry-restore-pending"),
        format!("{}\n{}", checkpoint.id, s.ws.display()),
    )
    .expect("note");
    std::fs::write(s.store_dir.join("gantry-index.lock"), "").expect("stale lock");

    let finished =
        gantry_checkpoint::CheckpointStore::finish_interrupted(&s.store_dir).expect("finish");

    assert_eq!(finished, Some(checkpoint.id));
    assert_eq!(tree(&s.ws), at_checkpoint);
    assert_eq!(
        gantry_checkpoint::CheckpointStore::finish_interrupted(&s.store_dir).expect("again"),
        None
    );
}

#[test]
fn a_continuation_store_carries_on_from_the_rewound_one() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    s.write("b.txt", "b");
    let store = s.store();
    let checkpoint = store.record("turn 1").expect("checkpoint");
    s.write("a.txt", "changed");
    store.mark_left().expect("turn end");
    store.restore(&checkpoint.id).expect("rewind");

    let next_dir = s.store_dir.with_file_name("next.git");
    let next = store.continue_into(&next_dir).expect("continue");
    assert!(next.changed_by_others().expect("check").is_empty());
    s.write("b.txt", "the next turn's");
    let recorded = next.record("turn 2").expect("checkpoint");
    assert_eq!(recorded.files_changed, vec![PathBuf::from("b.txt")]);
    s.write("b.txt", "later");
    next.restore(&recorded.id)
        .expect("rewind in the continuation");
    assert_eq!(
        std::fs::read(s.ws.join("b.txt")).expect("b"),
        b"the next turn's"
    );
}

#[test]
fn a_rewind_never_writes_through_a_directory_since_replaced_by_a_link_outside() {
    for hidden in [false, true] {
        let s = Scratch::new();
        s.write("src/a.txt", "checkpointed\n");
        s.write("src/sub/b.txt", "checkpointed too\n");
        let store = s.store();
        let checkpoint = store.record("turn").expect("checkpoint");
        let at_checkpoint = tree(&s.ws);
        // Outside the workspace, files named as the checkpoint's are.
        let outside = s.ws.with_file_name("outside");
        std::fs::create_dir_all(outside.join("sub")).expect("outside");
        std::fs::write(outside.join("a.txt"), "precious\n").expect("file");
        std::fs::write(outside.join("sub/b.txt"), "precious too\n").expect("file");
        let outside_before = tree(&outside);
        // The agent replaces the directory by a link to outside (and, the
        // second time, hides the link from git with an ignore rule).
        std::fs::remove_dir_all(s.ws.join("src")).expect("rm");
        std::os::unix::fs::symlink(&outside, s.ws.join("src")).expect("symlink");
        if hidden {
            s.write(".gitignore", "src\n");
        }

        store.restore(&checkpoint.id).expect("rewind");

        assert_eq!(tree(&outside), outside_before, "hidden: {hidden}");
        assert_eq!(tree(&s.ws), at_checkpoint, "hidden: {hidden}");
    }
}
