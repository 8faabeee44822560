//! What a checkpoint keeps, and what it reports not keeping.

use std::path::PathBuf;

use gantry_checkpoint::NotKeptReason;

use crate::support::Scratch;

#[test]
fn a_checkpoint_names_the_files_changed_since_the_one_before() {
    let s = Scratch::new();
    s.write("a.txt", "one");
    s.write("dir/b.txt", "two");
    let store = s.store();
    let first = store.record("turn 1").expect("first");
    assert_eq!(
        first.files_changed,
        vec![PathBuf::from("a.txt"), PathBuf::from("dir/b.txt")]
    );
    s.write("a.txt", "changed");
    let second = store.record("turn 2").expect("second");
    assert_eq!(second.files_changed, vec![PathBuf::from("a.txt")]);
    assert_ne!(first.id, second.id);
    let unchanged = store.record("turn 3").expect("third");
    assert!(unchanged.files_changed.is_empty());
    assert_ne!(unchanged.id, second.id);

    // The store stays a repository git reads as its own: each checkpoint a
    // commit after the one before, nothing broken.
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&s.store_dir)
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["fsck", "--strict", "--no-dangling"]);
    assert_eq!(
        git(&["log", "--format=%H %s", "refs/gantry/latest"]),
        format!(
            "{} turn 3\n{} turn 2\n{} turn 1\n",
            unchanged.id, second.id, first.id
        )
    );
}

#[test]
fn a_file_over_the_size_limit_is_reported_not_kept() {
    let s = Scratch::new();
    s.write("small.txt", "small");
    s.write("big.bin", vec![7u8; 2048]);
    let store = s.store().with_size_limit(1024);
    let checkpoint = store.record("turn").expect("checkpoint");
    assert_eq!(checkpoint.files_changed, vec![PathBuf::from("small.txt")]);
    assert_eq!(checkpoint.not_kept.len(), 1);
    assert_eq!(checkpoint.not_kept[0].path, PathBuf::from("big.bin"));
    assert_eq!(checkpoint.not_kept[0].reason, NotKeptReason::TooLarge(2048));

    // Kept while small, then grown past the limit: reported, not kept as
    // its old self.
    s.write("small.txt", vec![1u8; 4096]);
    let grown = store.record("turn").expect("checkpoint");
    assert_eq!(grown.files_changed, vec![PathBuf::from("small.txt")]);
    let names: Vec<_> = grown.not_kept.iter().map(|n| n.path.clone()).collect();
    assert_eq!(
        names,
        vec![PathBuf::from("big.bin"), PathBuf::from("small.txt")]
    );
}

#[test]
fn special_files_and_nested_repositories_are_reported_not_kept() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let fifo = s.ws.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    s.write("vendor/lib/x.txt", "x");
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(s.ws.join("vendor/lib"))
        .status()
        .expect("git init");
    let checkpoint = s.store().record("turn").expect("checkpoint");
    let reported: Vec<_> = checkpoint
        .not_kept
        .iter()
        .map(|n| (n.path.clone(), n.reason))
        .collect();
    assert_eq!(
        reported,
        vec![
            (PathBuf::from("pipe"), NotKeptReason::Special),
            (PathBuf::from("vendor/lib"), NotKeptReason::NestedRepository),
        ]
    );
    assert_eq!(checkpoint.files_changed, vec![PathBuf::from("a.txt")]);
}

#[test]
fn ignored_files_and_the_users_git_are_left_alone() {
    let s = Scratch::new();
    s.user_git(&["init", "-q"]);
    s.write(".gitignore", "target/\n");
    s.write("target/out.o", "build output");
    s.write("local.env", "SECRET=1");
    std::fs::write(s.ws.join(".git/info/exclude"), "local.env\n").expect("exclude");
    s.write("src/main.rs", "fn main() {}");
    s.user_git(&["add", "src/main.rs"]);
    s.user_git(&["commit", "-qm", "first"]);
    s.write("src/main.rs", "fn main() { changed() }");
    let status_before = s.user_git(&["status", "--porcelain"]);
    let index_before = std::fs::read(s.ws.join(".git/index")).expect("index");

    let checkpoint = s.store().record("turn").expect("checkpoint");

    assert_eq!(
        checkpoint.files_changed,
        vec![PathBuf::from(".gitignore"), PathBuf::from("src/main.rs")]
    );
    assert_eq!(s.user_git(&["status", "--porcelain"]), status_before);
    assert_eq!(
        std::fs::read(s.ws.join(".git/index")).expect("index"),
        index_before
    );
    assert_eq!(s.user_git(&["stash", "list"]), "");
    assert_eq!(s.user_git(&["rev-list", "--all", "--count"]).trim(), "1");
}

#[test]
fn a_store_inside_its_workspace_does_not_record_itself() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store_dir = s.ws.join(".data/checkpoints/t.git");
    let store = gantry_checkpoint::CheckpointStore::open(&store_dir, &s.ws).expect("store");
    let first = store.record("turn 1").expect("checkpoint");
    assert_eq!(first.files_changed, vec![PathBuf::from("a.txt")]);
    let second = store.record("turn 2").expect("checkpoint");
    assert!(
        second.files_changed.is_empty(),
        "{:?}",
        second.files_changed
    );
}

#[test]
fn what_appears_after_a_checkpoint_is_found_by_the_next() {
    let s = Scratch::new();
    s.write("dir/a.txt", "a");
    s.write(".gitignore", "*.dat\n");
    s.write("dir/ignored.dat", vec![1u8; 4096]);
    let store = s.store().with_size_limit(1024);
    let first = store.record("turn 1").expect("checkpoint");
    assert!(first.not_kept.is_empty(), "{:?}", first.not_kept);

    // Each in a directory the first checkpoint saw, right after it.
    s.write("dir/big.bin", vec![7u8; 2048]);
    let fifo = s.ws.join("dir/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let second = store.record("turn 2").expect("checkpoint");
    let reported: Vec<_> = second
        .not_kept
        .iter()
        .map(|n| (n.path.clone(), n.reason))
        .collect();
    assert_eq!(
        reported,
        vec![
            (PathBuf::from("dir/big.bin"), NotKeptReason::TooLarge(2048)),
            (PathBuf::from("dir/pipe"), NotKeptReason::Special),
        ]
    );
    assert!(
        second.files_changed.is_empty(),
        "{:?}",
        second.files_changed
    );

    // Still not kept while nothing changes, and kept once small again.
    let third = store.record("turn 3").expect("checkpoint");
    assert_eq!(third.not_kept, second.not_kept);
    s.write("dir/big.bin", "small now");
    let fourth = store.record("turn 4").expect("checkpoint");
    assert_eq!(fourth.files_changed, vec![PathBuf::from("dir/big.bin")]);
    assert_eq!(fourth.not_kept.len(), 1, "{:?}", fourth.not_kept);

    // A rule taken out of .gitignore: the large file it hid is not kept,
    // though its directory did not change.
    s.write(".gitignore", "");
    let fifth = store.record("turn 5").expect("checkpoint");
    let names: Vec<_> = fifth.not_kept.iter().map(|n| n.path.clone()).collect();
    assert_eq!(
        names,
        vec![PathBuf::from("dir/ignored.dat"), PathBuf::from("dir/pipe")]
    );
    assert_eq!(fifth.files_changed, vec![PathBuf::from(".gitignore")]);
}

#[test]
fn an_unchanged_workspace_records_the_same_tree_under_a_new_id() {
    let s = Scratch::new();
    s.write("a.txt", "a");
    let store = s.store();
    let first = store.record("turn 1").expect("checkpoint");
    store.mark_left().expect("turn end");
    let second = store.record("turn 2").expect("checkpoint");
    assert_ne!(first.id, second.id, "each turn its own checkpoint");
    assert!(second.files_changed.is_empty());
    s.write("a.txt", "changed");
    store.restore(&first.id).expect("rewind");
    // The restore rewrote the store's index: what it holds is asked again.
    s.write("b.txt", "b");
    let third = store.record("turn 3").expect("checkpoint");
    assert_eq!(third.files_changed, vec![PathBuf::from("b.txt")]);
}

#[test]
fn an_unchanged_directory_is_not_listed_again_and_what_it_holds_still_counts() {
    let s = Scratch::new();
    s.write("dir/a.txt", "a");
    s.write("dir/big.bin", vec![7u8; 2048]);
    s.write("other/b.txt", "b");
    let fifo = s.ws.join("dir/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    // Directories last changed an hour ago: the next scans trust what the
    // first saw of them.
    for dir in [".", "dir", "other"] {
        let aged = std::process::Command::new("touch")
            .args(["-h", "-d", "1 hour ago"])
            .arg(s.ws.join(dir))
            .status()
            .expect("touch");
        assert!(aged.success());
    }
    let store = s.store().with_size_limit(1024);
    let first = store.record("turn 1").expect("checkpoint");
    let expected = vec![
        (PathBuf::from("dir/big.bin"), NotKeptReason::TooLarge(2048)),
        (PathBuf::from("dir/pipe"), NotKeptReason::Special),
    ];
    let reasons = |c: &gantry_checkpoint::Checkpoint| -> Vec<_> {
        c.not_kept
            .iter()
            .map(|n| (n.path.clone(), n.reason))
            .collect()
    };
    assert_eq!(reasons(&first), expected);
    let second = store.record("turn 2").expect("checkpoint");
    assert_eq!(reasons(&second), expected, "from what the first scan saw");

    // Grown in place (its directory unchanged): its new size counts.
    s.write("dir/big.bin", vec![7u8; 4096]);
    // Kept, then grown in place: found from what git added.
    s.write("other/b.txt", vec![1u8; 3000]);
    let third = store.record("turn 3").expect("checkpoint");
    assert_eq!(
        reasons(&third),
        vec![
            (PathBuf::from("dir/big.bin"), NotKeptReason::TooLarge(4096)),
            (PathBuf::from("dir/pipe"), NotKeptReason::Special),
            (PathBuf::from("other/b.txt"), NotKeptReason::TooLarge(3000)),
        ]
    );
    assert_eq!(third.files_changed, vec![PathBuf::from("other/b.txt")]);
    let fourth = store.record("turn 4").expect("checkpoint");
    assert_eq!(reasons(&fourth), reasons(&third));
    assert!(fourth.files_changed.is_empty());

    // A new file in a directory of an hour ago changes the directory.
    s.write("other/new.bin", vec![2u8; 5000]);
    let fifth = store.record("turn 5").expect("checkpoint");
    assert!(
        reasons(&fifth).contains(&(
            PathBuf::from("other/new.bin"),
            NotKeptReason::TooLarge(5000)
        )),
        "{:?}",
        fifth.not_kept
    );
}

#[test]
fn files_changed_is_what_differs_from_the_checkpoint_before_whoever_changed_it() {
    let s = Scratch::new();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        s.write(name, "first");
    }
    let store = s.store();
    store.record("turn 1").expect("checkpoint");
    // The turn changes a and b; at its end the store notes the state.
    s.write("a.txt", "the turn's");
    s.write("b.txt", "the turn's");
    store.mark_left().expect("turn end");
    let next = store.record("turn 2").expect("checkpoint");
    assert_eq!(
        next.files_changed,
        vec![PathBuf::from("a.txt"), PathBuf::from("b.txt")]
    );

    s.write("c.txt", "the turn's");
    store.mark_left().expect("turn end");
    // Between turns, the user puts c back and edits d.
    s.write("c.txt", "first");
    s.write("d.txt", "the user's");
    let third = store.record("turn 3").expect("checkpoint");
    assert_eq!(third.files_changed, vec![PathBuf::from("d.txt")]);
}
