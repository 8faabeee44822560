//! A checkpoint's files written into a fork's new directory.

use crate::support::{Scratch, chmod, tree};

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
