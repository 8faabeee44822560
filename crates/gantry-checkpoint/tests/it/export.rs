//! A checkpoint's files written into a fork's new directory: a worktree of
//! the user's repository where the workspace is one, a plain copy
//! otherwise, and never through a path already at the fork's name.

use std::path::Path;
use std::process::Command;

use crate::support::{Entry, Scratch, chmod, tree};

#[test]
fn export_writes_the_checkpoints_files_into_a_new_directory() {
    let s = Scratch::new();
    s.write("src/lib.rs", "pub fn f() {}\n");
    s.write("tool.sh", "#!/bin/sh\n");
    chmod(&s.ws.join("tool.sh"), 0o755);
    std::os::unix::fs::symlink("src/lib.rs", s.ws.join("link")).expect("symlink");
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    let at_checkpoint = tree(&s.ws);
    s.write("src/lib.rs", "later\n");

    let fork = s.ws.parent().expect("parent").join("ws-fork");
    store.export(&checkpoint.id, &fork).expect("export");

    assert_eq!(tree(&fork), at_checkpoint);
    assert_eq!(
        std::fs::read(s.ws.join("src/lib.rs")).expect("source untouched"),
        b"later\n"
    );
}

#[test]
fn a_fork_of_a_plain_directory_is_a_plain_copy_beside_it() {
    let s = Scratch::new();
    s.write("a.txt", "a\n");
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    let at_checkpoint = tree(&s.ws);
    s.write("a.txt", "later\n");

    let fork = store.fork(&checkpoint.id).expect("fork");

    assert_eq!(fork.branch, None);
    assert_eq!(
        fork.dir,
        s.ws.with_file_name(format!("ws-fork-{}", &checkpoint.id.as_str()[..12]))
    );
    assert_eq!(tree(&fork.dir), at_checkpoint);
    assert!(!fork.dir.join(".git").exists());
    // A second fork at the same checkpoint takes the next name.
    let again = store.fork(&checkpoint.id).expect("fork again");
    assert_eq!(
        again
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned()),
        Some(format!("ws-fork-{}-2", &checkpoint.id.as_str()[..12]))
    );
}

#[test]
fn a_fork_of_a_repository_is_a_worktree_on_its_own_branch_and_nothing_else_changes() {
    let s = Scratch::new();
    s.user_git(&["init", "-q", "-b", "main"]);
    s.write("kept.txt", "committed\n");
    s.write("edited.txt", "committed\n");
    s.write("removed.txt", "committed\n");
    s.user_git(&["add", "."]);
    s.user_git(&["commit", "-qm", "first"]);
    // The user's own state: a stash, a staged change, an unstaged one.
    s.write("kept.txt", "stashed\n");
    s.user_git(&["stash", "-q"]);
    s.write("staged.txt", "staged\n");
    s.user_git(&["add", "staged.txt"]);
    // What the agent did before the checkpoint.
    s.write("edited.txt", "the agent's edit\n");
    std::fs::remove_file(s.ws.join("removed.txt")).expect("rm");
    s.write("created.txt", "the agent's file\n");
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    let at_checkpoint = tree(&s.ws);
    s.write("edited.txt", "after the checkpoint\n");
    let before = UserRepo::read(&s);

    let fork = store.fork(&checkpoint.id).expect("fork");

    let branch = format!("gantry/fork-{}", &checkpoint.id.as_str()[..12]);
    assert_eq!(fork.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(tree(&fork.dir), at_checkpoint, "the checkpoint's files");
    let in_fork = |args: &[&str]| git_in(&fork.dir, args);
    assert_eq!(
        in_fork(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        branch
    );
    assert_eq!(
        in_fork(&["status", "--porcelain", "--untracked-files=all"]),
        " M edited.txt\n D removed.txt\n?? created.txt\n?? staged.txt\n",
        "what the checkpoint changed since the commit, to review"
    );

    // The user's repository: the worktree's entry and its branch, nothing
    // else; the source workspace as it was.
    let after = UserRepo::read(&s);
    let new_refs: Vec<_> = after
        .refs
        .iter()
        .filter(|r| !before.refs.contains(r))
        .cloned()
        .collect();
    assert_eq!(new_refs.len(), 1, "{new_refs:?}");
    assert!(new_refs[0].ends_with(&format!("refs/heads/{branch}")));
    assert!(before.refs.iter().all(|r| after.refs.contains(r)));
    assert_eq!(after.index, before.index);
    assert_eq!(after.stash, before.stash);
    assert_eq!(after.status, before.status);
    assert_eq!(after.head, before.head);
    assert_eq!(after.worktrees.len(), before.worktrees.len() + 1);
    assert_eq!(
        std::fs::read(s.ws.join("edited.txt")).expect("source"),
        b"after the checkpoint\n"
    );
}

#[test]
fn a_symlink_planted_at_the_forks_name_is_never_followed() {
    let s = Scratch::new();
    s.user_git(&["init", "-q"]);
    s.write("a.txt", "a\n");
    s.user_git(&["add", "."]);
    s.user_git(&["commit", "-qm", "first"]);
    let store = s.store();
    let checkpoint = store.record("turn").expect("checkpoint");
    let elsewhere = s.ws.with_file_name("elsewhere");
    std::fs::create_dir(&elsewhere).expect("elsewhere");
    let planted =
        s.ws.with_file_name(format!("ws-fork-{}", &checkpoint.id.as_str()[..12]));
    std::os::unix::fs::symlink(&elsewhere, &planted).expect("planted link");

    let fork = store.fork(&checkpoint.id).expect("fork");

    assert_ne!(fork.dir, planted);
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("elsewhere").count(),
        0,
        "nothing written through the link"
    );
    assert_eq!(std::fs::read_link(&planted).expect("link kept"), elsewhere);
    let meta = std::fs::symlink_metadata(&fork.dir).expect("fork dir");
    assert!(meta.is_dir() && !meta.file_type().is_symlink());
    assert_eq!(
        tree(&fork.dir).get(Path::new("a.txt")),
        Some(&Entry::File {
            bytes: b"a\n".to_vec(),
            executable: false
        })
    );
}

/// What a fork must leave as it is in the user's repository.
#[derive(Debug, PartialEq, Eq)]
struct UserRepo {
    refs: Vec<String>,
    index: Vec<u8>,
    stash: String,
    status: String,
    head: String,
    worktrees: Vec<String>,
}

impl UserRepo {
    fn read(s: &Scratch) -> Self {
        let lines = |text: String| text.lines().map(str::to_owned).collect::<Vec<_>>();
        // Status first: it may refresh the index's stat data, which is
        // the user's git writing, not the fork.
        let status = s.user_git(&["status", "--porcelain"]);
        Self {
            status,
            refs: lines(s.user_git(&["for-each-ref", "--format=%(objectname) %(refname)"])),
            stash: s.user_git(&["stash", "list", "--format=%H %s"]),
            head: s.user_git(&["rev-parse", "HEAD"]),
            worktrees: lines(s.user_git(&["worktree", "list", "--porcelain"]))
                .into_iter()
                .filter(|l| l.starts_with("worktree "))
                .collect(),
            index: std::fs::read(s.ws.join(".git/index")).expect("index"),
        }
    }
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
