//! list_dir, glob and grep over a real tree with a .gitignore.

use crate::common;

use std::fs;

use common::{call, result_text};
use gantry_tools::{GlobTool, GrepTool, ListDirTool, ToolRegistry, ToolStatus};
use serde_json::json;

fn tree() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    for d in ["src/nested", "ignored", ".hidden", "empty"] {
        fs::create_dir_all(w.join(d)).unwrap();
    }
    fs::write(w.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    fs::write(w.join("src/a.rs"), "fn main() {}\n// needle here\n").unwrap();
    fs::write(w.join("src/b.rs"), "Needle upper\n").unwrap();
    fs::write(w.join("src/nested/c.rs"), "x\nneedle deep\n").unwrap();
    fs::write(w.join("src/notes.txt"), "needle in text\n").unwrap();
    fs::write(w.join("ignored/x.rs"), "needle ignored\n").unwrap();
    fs::write(w.join("debug.log"), "needle log\n").unwrap();
    fs::write(w.join(".hidden/h.rs"), "needle hidden\n").unwrap();
    fs::write(w.join("bin.dat"), b"\x00\x01needle\n").unwrap();
    ws
}

#[tokio::test]
async fn list_dir_respects_gitignore_and_depth() {
    let ws = tree();
    let out = call(&ListDirTool, ws.path(), json!({})).await;
    assert_eq!(
        result_text(&out),
        ".gitignore\n.hidden/\nbin.dat\nempty/\nsrc/\n",
    );
    let out = call(&ListDirTool, ws.path(), json!({"path": "src", "depth": 2})).await;
    assert_eq!(
        result_text(&out),
        "a.rs\nb.rs\nnested/\nnested/c.rs\nnotes.txt\n"
    );
    let out = call(&ListDirTool, ws.path(), json!({"path": "empty"})).await;
    assert!(result_text(&out).contains("is empty"));
    let out = call(&ListDirTool, ws.path(), json!({"depth": 9})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("between 1 and 5"),
        "{}",
        out.model_output
    );
    let out = call(&ListDirTool, ws.path(), json!({"path": "src/a.rs"})).await;
    assert!(
        out.model_output.contains("use read_file"),
        "{}",
        out.model_output
    );
    let out = call(&ListDirTool, ws.path(), json!({"path": ".."})).await;
    assert!(
        out.model_output.contains("outside the workspace"),
        "{}",
        out.model_output
    );
    let out = call(&ListDirTool, ws.path(), json!({"depth": "2"})).await;
    assert!(
        out.model_output.contains("invalid type"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn list_dir_caps_entries() {
    let ws = tempfile::tempdir().unwrap();
    for i in 0..1005 {
        fs::write(ws.path().join(format!("f{i:04}")), "").unwrap();
    }
    let text = result_text(&call(&ListDirTool, ws.path(), json!({})).await);
    assert_eq!(text.lines().filter(|l| l.starts_with('f')).count(), 1000);
    assert!(text.contains("capped at 1000 entries"));
}

#[tokio::test]
async fn glob_respects_gitignore_and_hidden() {
    let ws = tree();
    let out = call(&GlobTool, ws.path(), json!({"pattern": "**/*.rs"})).await;
    assert_eq!(result_text(&out), "src/a.rs\nsrc/b.rs\nsrc/nested/c.rs\n");
    let out = call(
        &GlobTool,
        ws.path(),
        json!({"pattern": "*.rs", "path": "src"}),
    )
    .await;
    assert_eq!(result_text(&out), "src/a.rs\nsrc/b.rs\n");
    let out = call(&GlobTool, ws.path(), json!({"pattern": "src/*.{rs,txt}"})).await;
    assert_eq!(result_text(&out), "src/a.rs\nsrc/b.rs\nsrc/notes.txt\n");
    let out = call(&GlobTool, ws.path(), json!({"pattern": "*.log"})).await;
    assert!(result_text(&out).starts_with("No files match"));
    let out = call(&GlobTool, ws.path(), json!({"pattern": "src/[a"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("invalid glob pattern"),
        "{}",
        out.model_output
    );
    let out = call(&GlobTool, ws.path(), json!({"pattern": "*", "path": "/"})).await;
    assert!(
        out.model_output.contains("outside the workspace"),
        "{}",
        out.model_output
    );
}

#[tokio::test]
async fn grep_respects_gitignore_binary_and_filters() {
    let ws = tree();
    let out = call(&GrepTool, ws.path(), json!({"pattern": "needle"})).await;
    assert_eq!(out.status, ToolStatus::Ok);
    assert_eq!(
        result_text(&out),
        "src/a.rs:2:// needle here\nsrc/nested/c.rs:2:needle deep\nsrc/notes.txt:1:needle in text\n"
    );
    let out = call(
        &GrepTool,
        ws.path(),
        json!({"pattern": "needle", "glob": "*.rs", "case_insensitive": true}),
    )
    .await;
    assert_eq!(
        result_text(&out),
        "src/a.rs:2:// needle here\nsrc/b.rs:1:Needle upper\nsrc/nested/c.rs:2:needle deep\n"
    );
    let out = call(
        &GrepTool,
        ws.path(),
        json!({"pattern": "need+le", "path": "src/nested"}),
    )
    .await;
    assert_eq!(result_text(&out), "src/nested/c.rs:2:needle deep\n");
    let out = call(
        &GrepTool,
        ws.path(),
        json!({"pattern": "needle", "path": "src/a.rs"}),
    )
    .await;
    assert_eq!(result_text(&out), "src/a.rs:2:// needle here\n");
    let out = call(
        &GrepTool,
        ws.path(),
        json!({"pattern": "needle", "max_results": 1}),
    )
    .await;
    let text = result_text(&out);
    assert!(
        text.starts_with("src/a.rs:2:// needle here\n[results capped at 1"),
        "{text}"
    );
    let out = call(&GrepTool, ws.path(), json!({"pattern": "zzz"})).await;
    assert!(result_text(&out).starts_with("No matches"));
}

#[tokio::test]
async fn grep_errors() {
    let ws = tree();
    let out = call(&GrepTool, ws.path(), json!({"pattern": "fn main("})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("invalid regex"),
        "{}",
        out.model_output
    );
    let out = call(
        &GrepTool,
        ws.path(),
        json!({"pattern": "x", "max_results": 0}),
    )
    .await;
    assert!(
        out.model_output.contains("max_results"),
        "{}",
        out.model_output
    );
    let out = call(&GrepTool, ws.path(), json!({"pattern": ["x"]})).await;
    assert!(
        out.model_output.contains("invalid type"),
        "{}",
        out.model_output
    );
    let out = call(&GrepTool, ws.path(), json!({"pattern": "x", "path": "../"})).await;
    assert!(
        out.model_output.contains("outside the workspace"),
        "{}",
        out.model_output
    );
}

#[test]
fn builtin_registry_and_schemas() {
    let r = ToolRegistry::builtin();
    assert_eq!(
        r.names().collect::<Vec<_>>(),
        [
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "shell",
            "todo_write",
            "write_file"
        ]
    );
    for spec in r.specs() {
        assert!(!spec.description.is_empty());
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
        assert!(spec.parameters["properties"].is_object(), "{}", spec.name);
        for req in spec.parameters["required"].as_array().into_iter().flatten() {
            let req = req.as_str().unwrap();
            assert!(
                spec.parameters["properties"].get(req).is_some(),
                "{} {req}",
                spec.name
            );
        }
    }
}
