//! read_file, write_file, edit_file and path safety, on real files.

use crate::common;

use std::fs;
use std::os::unix::fs::symlink;

use common::{call, canon, result_text};
use gantry_tools::workspace_path::{PathError, resolve};
use gantry_tools::{EditFileTool, ReadFileTool, ToolOutput, ToolStatus, WriteFileTool};
use gantry_types::ItemKind;
use serde_json::json;

fn diff_of(out: &ToolOutput) -> (String, String) {
    match &out.item {
        ItemKind::FileChange { path, diff } => (path.clone(), diff.clone()),
        other => panic!("expected FileChange, got {other:?}"),
    }
}

fn assert_refused(out: &ToolOutput) {
    assert_eq!(out.status, ToolStatus::Error, "{}", out.model_output);
    assert!(
        out.model_output.contains("outside the workspace"),
        "{}",
        out.model_output
    );
}

/// A workspace and, next to it, a directory with a secret the tools must not reach.
fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    (ws, outside)
}

#[test]
fn resolve_rules() {
    let (ws, outside) = setup();
    let w = canon(ws.path());
    fs::create_dir(w.join("sub")).unwrap();
    assert_eq!(resolve(&w, "sub/../a.txt").unwrap().rel, "a.txt");
    assert_eq!(resolve(&w, ".").unwrap().rel, ".");
    assert_eq!(resolve(&w, "new/dir/../f").unwrap().abs, w.join("new/f"));
    assert_eq!(
        resolve(&w, w.join("sub").to_str().unwrap()).unwrap().rel,
        "sub"
    );
    assert_eq!(resolve(&w, ""), Err(PathError::Empty));
    let err = resolve(&w, "../x").unwrap_err();
    assert_eq!(
        err,
        PathError::Outside {
            given: "../x".into(),
            workspace: w.clone()
        }
    );
    assert!(err.to_string().starts_with(&format!(
        "path \"../x\" is outside the workspace {}",
        w.display()
    )));
    assert!(resolve(&w, "/etc/passwd").is_err());
    // A dangling symlink whose target is outside: writing through it would escape.
    symlink(outside.path().join("new.txt"), w.join("dangling")).unwrap();
    assert!(matches!(
        resolve(&w, "dangling"),
        Err(PathError::Outside { .. })
    ));
    // ...and one whose target is inside is fine.
    symlink("sub/later.txt", w.join("dangling_in")).unwrap();
    assert_eq!(resolve(&w, "dangling_in").unwrap().rel, "sub/later.txt");
}

#[tokio::test]
async fn escapes_are_refused() {
    let (ws, outside) = setup();
    let w = ws.path();
    let secret = canon(outside.path()).join("secret.txt");
    // `..` up and over into the sibling directory.
    let rel_escape = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    assert_refused(&call(&ReadFileTool, w, json!({"path": rel_escape})).await);
    assert_refused(&call(&ReadFileTool, w, json!({"path": secret.to_str().unwrap()})).await);
    // A symlink inside the workspace to a file outside.
    symlink(&secret, w.join("link.txt")).unwrap();
    assert_refused(&call(&ReadFileTool, w, json!({"path": "link.txt"})).await);
    assert_refused(
        &call(
            &WriteFileTool,
            w,
            json!({"path": "link.txt", "content": "pwned"}),
        )
        .await,
    );
    assert_refused(
        &call(
            &EditFileTool,
            w,
            json!({"path": "link.txt", "old_string": "secret", "new_string": "x"}),
        )
        .await,
    );
    // A symlinked directory pointing outside: no new files through it.
    symlink(outside.path(), w.join("linkdir")).unwrap();
    assert_refused(
        &call(
            &WriteFileTool,
            w,
            json!({"path": "linkdir/new.txt", "content": "x"}),
        )
        .await,
    );
    assert_refused(
        &call(
            &WriteFileTool,
            w,
            json!({"path": "linkdir/a/b/new.txt", "content": "x"}),
        )
        .await,
    );
    assert_refused(
        &call(
            &WriteFileTool,
            w,
            json!({"path": "../escaped.txt", "content": "x"}),
        )
        .await,
    );
    assert!(!outside.path().join("new.txt").exists());
    assert!(!outside.path().join("a").exists());
    assert!(
        !outside
            .path()
            .parent()
            .unwrap()
            .join("escaped.txt")
            .exists()
    );
    assert_eq!(fs::read_to_string(&secret).unwrap(), "secret\n");
}

#[tokio::test]
async fn symlinks_inside_the_workspace_still_work() {
    let ws = tempfile::tempdir().unwrap();
    let w = canon(ws.path());
    fs::create_dir(w.join("sub")).unwrap();
    fs::write(w.join("sub/real.txt"), "one\n").unwrap();
    symlink("sub/real.txt", w.join("link.txt")).unwrap();
    symlink("sub", w.join("linkdir")).unwrap();

    let out = call(&ReadFileTool, &w, json!({"path": "link.txt"})).await;
    assert_eq!(result_text(&out), "     1\tone\n");
    let out = call(&ReadFileTool, &w, json!({"path": "linkdir/real.txt"})).await;
    assert_eq!(result_text(&out), "     1\tone\n");

    // Writing through the link changes its target; the link stays a link.
    let out = call(
        &WriteFileTool,
        &w,
        json!({"path": "link.txt", "content": "two\n"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    assert_eq!(diff_of(&out).0, "sub/real.txt");
    assert_eq!(fs::read_to_string(w.join("sub/real.txt")).unwrap(), "two\n");
    assert!(
        fs::symlink_metadata(w.join("link.txt"))
            .unwrap()
            .is_symlink()
    );

    let out = call(
        &EditFileTool,
        &w,
        json!({"path": "link.txt", "old_string": "two", "new_string": "three"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    assert_eq!(
        fs::read_to_string(w.join("sub/real.txt")).unwrap(),
        "three\n"
    );
    assert!(
        fs::symlink_metadata(w.join("link.txt"))
            .unwrap()
            .is_symlink()
    );

    // A new file through a directory link lands in the linked directory.
    let out = call(
        &WriteFileTool,
        &w,
        json!({"path": "linkdir/new/deep.txt", "content": "x"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    assert_eq!(diff_of(&out).0, "sub/new/deep.txt");
    assert_eq!(fs::read_to_string(w.join("sub/new/deep.txt")).unwrap(), "x");
}

#[tokio::test]
async fn escaping_symlinks_are_refused_with_a_clear_error() {
    let (ws, outside) = setup();
    let w = canon(ws.path());
    let secret = canon(outside.path()).join("secret.txt");
    symlink(&secret, w.join("out.txt")).unwrap();
    symlink(outside.path(), w.join("outdir")).unwrap();
    let calls = [
        (
            &ReadFileTool as &dyn gantry_tools::Tool,
            json!({"path": "out.txt"}),
        ),
        (&ReadFileTool, json!({"path": "outdir/secret.txt"})),
        (
            &WriteFileTool,
            json!({"path": "out.txt", "content": "pwned"}),
        ),
        (
            &WriteFileTool,
            json!({"path": "outdir/secret.txt", "content": "pwned"}),
        ),
        (
            &EditFileTool,
            json!({"path": "out.txt", "old_string": "secret", "new_string": "pwned"}),
        ),
    ];
    for (tool, args) in calls {
        let out = call(tool, &w, args.clone()).await;
        assert_refused(&out);
        let given = args["path"].as_str().unwrap();
        assert!(
            out.model_output
                .contains(&format!("path {given:?} is outside the workspace")),
            "{}",
            out.model_output
        );
        assert!(
            out.model_output.contains("symlinks"),
            "{}",
            out.model_output
        );
    }
    // grep's walk does not follow the links either.
    let out = call(&gantry_tools::GrepTool, &w, json!({"pattern": "secret"})).await;
    assert!(
        !result_text(&out).contains("secret.txt:1:"),
        "{}",
        result_text(&out)
    );
    assert_eq!(fs::read_to_string(&secret).unwrap(), "secret\n");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn absolute_paths_inside_are_allowed() {
    let (ws, _o) = setup();
    let abs = canon(ws.path()).join("a.txt");
    fs::write(&abs, "hi\n").unwrap();
    let out = call(
        &ReadFileTool,
        ws.path(),
        json!({"path": abs.to_str().unwrap()}),
    )
    .await;
    assert_eq!(result_text(&out), "     1\thi\n");
}

#[tokio::test]
async fn read_file_ranges_and_notes() {
    let ws = tempfile::tempdir().unwrap();
    let body: String = (1..=10).map(|i| format!("line{i}\n")).collect();
    fs::write(ws.path().join("f.txt"), &body).unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "f.txt"})).await;
    assert_eq!(out.status, ToolStatus::Ok);
    let text = result_text(&out);
    assert!(text.starts_with("     1\tline1\n     2\tline2\n"));
    assert!(text.ends_with("    10\tline10\n"));
    assert!(!text.contains("more lines"));
    let out = call(
        &ReadFileTool,
        ws.path(),
        json!({"path": "f.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        result_text(&out),
        "     3\tline3\n     4\tline4\n... 6 more lines (file has 10 lines); use offset=5 to read on\n"
    );
    let out = call(
        &ReadFileTool,
        ws.path(),
        json!({"path": "f.txt", "offset": 11}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("past the end"),
        "{}",
        out.model_output
    );
    let out = call(
        &ReadFileTool,
        ws.path(),
        json!({"path": "f.txt", "offset": 0}),
    )
    .await;
    assert!(out.model_output.contains("1-based"), "{}", out.model_output);
    // No trailing newline on the last line, and an empty file.
    fs::write(ws.path().join("g.txt"), "a\nb").unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "g.txt"})).await;
    assert_eq!(result_text(&out), "     1\ta\n     2\tb\n");
    fs::write(ws.path().join("empty.txt"), "").unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "empty.txt"})).await;
    assert!(result_text(&out).contains("is empty"));
}

#[tokio::test]
async fn read_file_refusals_and_lossy_text() {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join("d")).unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "d"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("is a directory"),
        "{}",
        out.model_output
    );
    match &out.item {
        ItemKind::ToolCall {
            error: Some(e),
            name,
            ..
        } => {
            assert_eq!(name, "read_file");
            assert!(e.contains("list_dir"));
        }
        other => panic!("{other:?}"),
    }
    let mut bin = vec![0u8; 4096];
    bin.extend_from_slice(b"tail");
    fs::write(ws.path().join("b.bin"), bin).unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "b.bin"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(out.model_output.contains("binary"), "{}", out.model_output);
    fs::write(ws.path().join("latin1.txt"), b"caf\xe9 ok\n").unwrap();
    let out = call(&ReadFileTool, ws.path(), json!({"path": "latin1.txt"})).await;
    assert_eq!(result_text(&out), "     1\tcaf\u{FFFD} ok\n");
    let out = call(&ReadFileTool, ws.path(), json!({"path": "missing.txt"})).await;
    assert!(
        out.model_output.contains("does not exist"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn write_file_diffs_new_and_changed_files() {
    let ws = tempfile::tempdir().unwrap();
    let out = call(
        &WriteFileTool,
        ws.path(),
        json!({"path": "a/b/new.txt", "content": "hello\nworld\n"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    let (path, diff) = diff_of(&out);
    assert_eq!(path, "a/b/new.txt");
    assert!(
        diff.starts_with("--- /dev/null\n+++ b/a/b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"),
        "{diff}"
    );
    assert!(out.model_output.contains("Created a/b/new.txt"));
    assert_eq!(
        fs::read_to_string(ws.path().join("a/b/new.txt")).unwrap(),
        "hello\nworld\n"
    );

    let out = call(
        &WriteFileTool,
        ws.path(),
        json!({"path": "a/b/new.txt", "content": "hello\nthere\n"}),
    )
    .await;
    let (_, diff) = diff_of(&out);
    assert!(
        diff.starts_with("--- a/a/b/new.txt\n+++ b/a/b/new.txt\n"),
        "{diff}"
    );
    assert!(diff.contains(" hello\n-world\n+there\n"), "{diff}");
    assert_eq!(
        fs::read_to_string(ws.path().join("a/b/new.txt")).unwrap(),
        "hello\nthere\n"
    );

    let out = call(
        &WriteFileTool,
        ws.path(),
        json!({"path": "a", "content": "x"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(out.model_output.contains("is a directory"));
}

#[tokio::test]
async fn edit_file_replacements() {
    let ws = tempfile::tempdir().unwrap();
    let f = ws.path().join("code.rs");
    fs::write(&f, "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n").unwrap();

    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "code.rs", "old_string": "fn c() {}", "new_string": "x"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("not found"),
        "{}",
        out.model_output
    );
    assert!(
        out.model_output.contains("whitespace"),
        "{}",
        out.model_output
    );

    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "code.rs", "old_string": "let x = 1;", "new_string": "let y = 2;"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("occurs 2 times"),
        "{}",
        out.model_output
    );
    assert!(
        out.model_output.contains("replace_all"),
        "{}",
        out.model_output
    );
    assert!(
        fs::read_to_string(&f)
            .unwrap()
            .contains("let x = 1;\nlet x = 1;")
    );

    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "code.rs", "old_string": "fn b() {}", "new_string": "fn b() { todo!() }"}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    let (path, diff) = diff_of(&out);
    assert_eq!(path, "code.rs");
    assert!(diff.contains("-fn b() {}\n+fn b() { todo!() }\n"), "{diff}");

    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "code.rs", "old_string": "let x = 1;", "new_string": "let y = 2;", "replace_all": true}),
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    assert!(out.model_output.contains("2 occurrences"));
    assert_eq!(
        fs::read_to_string(&f).unwrap(),
        "fn a() {}\nfn b() { todo!() }\nlet y = 2;\nlet y = 2;\n"
    );

    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "nope.rs", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(
        out.model_output.contains("does not exist"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn wrong_arguments_are_errors_not_panics() {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    let out = call(&ReadFileTool, w, json!({"path": 5})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output
            .contains("invalid type: integer `5`, expected a string"),
        "{}",
        out.model_output
    );
    let out = call(&ReadFileTool, w, json!({"path": "a", "offset": -1})).await;
    assert_eq!(out.status, ToolStatus::Error);
    let out = call(&WriteFileTool, w, json!({"path": "a"})).await;
    assert!(
        out.model_output.contains("missing field `content`"),
        "{}",
        out.model_output
    );
    let out = call(
        &EditFileTool,
        w,
        json!({"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}),
    )
    .await;
    assert!(
        out.model_output.contains("invalid type"),
        "{}",
        out.model_output
    );
    let out = call(&EditFileTool, w, serde_json::Value::Null).await;
    assert!(
        out.model_output.contains("expected a JSON object"),
        "{}",
        out.model_output
    );
    let out = call(&ReadFileTool, w, json!({"path": ""})).await;
    assert!(
        out.model_output.contains("path is empty"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn fifos_are_refused_not_blocked_on() {
    let ws = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(ws.path().join("pipe"))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here; nothing to check
    }
    let out = call(&ReadFileTool, ws.path(), json!({"path": "pipe"})).await;
    assert!(
        out.model_output.contains("not a regular file"),
        "{}",
        out.model_output
    );
    let out = call(
        &WriteFileTool,
        ws.path(),
        json!({"path": "pipe", "content": "x"}),
    )
    .await;
    assert!(
        out.model_output.contains("not a regular file"),
        "{}",
        out.model_output
    );
    let out = call(
        &EditFileTool,
        ws.path(),
        json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(
        out.model_output.contains("not a regular file"),
        "{}",
        out.model_output
    );
}
