//! `write_file`: creates or overwrites a file, reporting a unified diff.

use std::io::Read;

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    file_change_error, file_change_interrupted, file_change_output, file_change_start, parse_args,
    unified_diff,
};
use crate::workspace_path::{self, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "write_file";

/// The `write_file` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFileTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Create a file or replace its whole content. Parent directories are \
                          created. Prefer edit_file for changing part of an existing file."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace (or absolute inside it)."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        file_change_start(args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let a: WriteArgs = match parse_args(NAME, &args) {
            Ok(a) => a,
            Err(msg) => return file_change_error(&args, msg),
        };
        if !ctx.sandbox.allows_writes() {
            return file_change_error(
                &args,
                format!("{NAME}: the sandbox is read-only; files cannot be changed in this thread"),
            );
        }
        let path = match workspace_path::resolve(&ctx.workspace, &a.path) {
            Ok(p) => p,
            Err(e) => return file_change_error(&args, format!("{NAME}: {e}")),
        };
        if ctx.cancel.is_cancelled() {
            return file_change_interrupted(&args);
        }
        // Not raced against cancellation: a write is short, and reporting
        // "interrupted" while it completes behind our back would be a lie.
        if let Some(files) = &ctx.host.files {
            // A file the host cannot read is a new one.
            let old = files.read_text(&path.abs).await.ok();
            return match files.write_text(&path.abs, &a.content).await {
                Ok(()) => {
                    let (diff, summary) = change(&path.rel, old.as_deref(), &a.content);
                    file_change_output(&path.rel, diff, summary)
                }
                Err(e) => {
                    file_change_error(&args, format!("{NAME}: cannot write {:?}: {e}", path.rel))
                }
            };
        }
        let joined = tokio::task::spawn_blocking(move || write(&path, &a.content)).await;
        match joined {
            Ok(Ok((rel, diff, summary))) => file_change_output(&rel, diff, summary),
            Ok(Err(msg)) => file_change_error(&args, msg),
            Err(e) => file_change_error(&args, format!("{NAME}: internal error: {e}")),
        }
    }
}

fn write(path: &WorkspacePath, content: &str) -> Result<(String, String, String), String> {
    let rel = &path.rel;
    // Every open below is beneath the workspace's fd (see workspace_path):
    // the path was checked, but the agent's shell may have swapped a
    // component for a symlink since.
    let old = match path.open_read() {
        Ok(mut file) => {
            let meta = file
                .metadata()
                .map_err(|e| format!("{NAME}: cannot read the current {rel:?}: {e}"))?;
            if meta.is_dir() {
                return Err(format!("{NAME}: {rel:?} is a directory; give a file path"));
            }
            // Reading a FIFO or device could block or never end.
            if !meta.is_file() {
                return Err(format!(
                    "{NAME}: {rel:?} is not a regular file (device, fifo or socket); refusing to replace it"
                ));
            }
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|e| format!("{NAME}: cannot read the current {rel:?}: {e}"))?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) if workspace_path::is_escape(&e) => return Err(format!("{NAME}: {e}")),
        Err(e) => return Err(format!("{NAME}: cannot read the current {rel:?}: {e}")),
    };
    path.create_parents().map_err(|e| {
        if workspace_path::is_escape(&e) {
            format!("{NAME}: {e}")
        } else {
            format!("{NAME}: cannot create the parent directories of {rel:?}: {e}")
        }
    })?;
    path.write_atomic(content.as_bytes())
        .map_err(|e| write_error(rel, &e))?;
    let (diff, summary) = change(rel, old.as_deref(), content);
    Ok((rel.clone(), diff, summary))
}

/// The message for a failed final write.
/// The diff of replacing `old` (`None`: no file) by `content`, and the
/// model's summary of it.
fn change(rel: &str, old: Option<&str>, content: &str) -> (String, String) {
    let diff = unified_diff(rel, old, content);
    let summary = match old {
        None => format!(
            "Created {rel} ({} bytes, {} lines).",
            content.len(),
            content.lines().count()
        ),
        Some(o) if o == content => format!("{rel} already had this content; nothing changed."),
        Some(_) => format!(
            "Overwrote {rel} ({} bytes, {} lines).",
            content.len(),
            content.lines().count()
        ),
    };
    (diff, summary)
}

fn write_error(rel: &str, e: &std::io::Error) -> String {
    if workspace_path::is_escape(e) {
        format!("{NAME}: {e}")
    } else if e.kind() == std::io::ErrorKind::IsADirectory {
        format!("{NAME}: {rel:?} is a directory; give a file path")
    } else {
        format!("{NAME}: cannot write {rel:?}: {e}")
    }
}
