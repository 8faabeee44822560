//! `edit_file`: exact string replacement in an existing file.

use std::io::Read;

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    file_change_error, file_change_interrupted, file_change_output, file_change_start, parse_args,
    unified_diff,
};
use crate::host::FileAccess;
use crate::workspace_path::{self, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "edit_file";

/// The `edit_file` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditFileTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for EditFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Replace an exact string in an existing file. `old_string` must match \
                          the file exactly (whitespace and indentation included) and occur once, \
                          unless `replace_all` is true. Read the file first."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace (or absolute inside it)."},
                    "old_string": {"type": "string", "description": "The exact text to replace (without read_file's line-number prefixes)."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        file_change_start(args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let a: EditArgs = match parse_args(NAME, &args) {
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
        if let Some(files) = &ctx.host.files {
            return match edit_hosted(files.as_ref(), &path, &a).await {
                Ok((rel, diff, summary)) => file_change_output(&rel, diff, summary),
                Err(msg) => file_change_error(&args, msg),
            };
        }
        // Not raced against cancellation, like write_file: it is short and
        // must not report "interrupted" for an edit that did happen.
        let joined = tokio::task::spawn_blocking(move || edit(&path, &a)).await;
        match joined {
            Ok(Ok((rel, diff, summary))) => file_change_output(&rel, diff, summary),
            Ok(Err(msg)) => file_change_error(&args, msg),
            Err(e) => file_change_error(&args, format!("{NAME}: internal error: {e}")),
        }
    }
}

fn edit(path: &WorkspacePath, a: &EditArgs) -> Result<(String, String, String), String> {
    let rel = &path.rel;
    check_strings(a)?;
    let bytes = read_current(path)?;
    // Editing a lossy decoding would silently rewrite the invalid bytes.
    let old = String::from_utf8(bytes).map_err(|_| {
        format!("{NAME}: {rel:?} is not valid UTF-8; edit_file only edits text files")
    })?;
    let (new, count) = replace(rel, &old, a)?;
    path.write_atomic(new.as_bytes()).map_err(|e| {
        if workspace_path::is_escape(&e) {
            format!("{NAME}: {e}")
        } else {
            format!("{NAME}: cannot write {rel:?}: {e}")
        }
    })?;
    Ok(change(rel, &old, &new, count))
}

/// The edit through a host's file access (an editor's buffers).
async fn edit_hosted(
    files: &dyn FileAccess,
    path: &WorkspacePath,
    a: &EditArgs,
) -> Result<(String, String, String), String> {
    let rel = &path.rel;
    check_strings(a)?;
    let old = files
        .read_text(&path.abs)
        .await
        .map_err(|e| format!("{NAME}: cannot read {rel:?}: {e}"))?;
    let (new, count) = replace(rel, &old, a)?;
    files
        .write_text(&path.abs, &new)
        .await
        .map_err(|e| format!("{NAME}: cannot write {rel:?}: {e}"))?;
    Ok(change(rel, &old, &new, count))
}

fn check_strings(a: &EditArgs) -> Result<(), String> {
    if a.old_string.is_empty() {
        return Err(format!(
            "{NAME}: `old_string` is empty; give the exact text to replace (use write_file to create a file)"
        ));
    }
    if a.old_string == a.new_string {
        return Err(format!(
            "{NAME}: `old_string` and `new_string` are identical; nothing would change"
        ));
    }
    Ok(())
}

/// `old` with the edit applied, and how many occurrences it replaced.
fn replace(rel: &str, old: &str, a: &EditArgs) -> Result<(String, usize), String> {
    let count = old.matches(a.old_string.as_str()).count();
    if count == 0 {
        let mut msg = format!(
            "{NAME}: `old_string` was not found in {rel:?}. It must match the file exactly, including \
             whitespace, indentation and line breaks; read the file again and copy the text exactly \
             (without the line-number prefixes)."
        );
        if old.contains("\r\n") && !a.old_string.contains("\r\n") && a.old_string.contains('\n') {
            msg.push_str(" Note: the file uses CRLF (\\r\\n) line endings.");
        }
        return Err(msg);
    }
    if count > 1 && !a.replace_all {
        return Err(format!(
            "{NAME}: `old_string` occurs {count} times in {rel:?}; include more surrounding context \
             so it matches exactly once, or set replace_all to true to replace all {count}"
        ));
    }
    let new = if a.replace_all {
        old.replace(a.old_string.as_str(), &a.new_string)
    } else {
        old.replacen(a.old_string.as_str(), &a.new_string, 1)
    };
    Ok((new, count))
}

/// The item's path, diff and the model's summary of an edit.
fn change(rel: &str, old: &str, new: &str, count: usize) -> (String, String, String) {
    let diff = unified_diff(rel, Some(old), new);
    let summary = format!(
        "Edited {rel}: replaced {count} occurrence{}.",
        if count == 1 { "" } else { "s" }
    );
    (rel.to_owned(), diff, summary)
}

/// The file's current bytes, read beneath the workspace's fd (see
/// `workspace_path`): a symlink swapped in since the check cannot lead the
/// read, or the write after it, outside the workspace.
fn read_current(path: &WorkspacePath) -> Result<Vec<u8>, String> {
    let rel = &path.rel;
    let mut file = match path.open_read() {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{NAME}: {rel:?} does not exist; use write_file to create it, or list_dir/glob to find the right path"
            ));
        }
        Err(e) if workspace_path::is_escape(&e) => return Err(format!("{NAME}: {e}")),
        Err(e) => return Err(format!("{NAME}: cannot read {rel:?}: {e}")),
    };
    // Reading a FIFO or device could block or never end.
    if file.metadata().is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(format!(
            "{NAME}: {rel:?} is not a regular file (device, fifo or socket); edit_file only edits text files"
        ));
    }
    let mut bytes = Vec::new();
    match file.read_to_end(&mut bytes) {
        Ok(_) => Ok(bytes),
        Err(e) if file.metadata().is_ok_and(|m| m.is_dir()) => {
            Err(format!("{NAME}: {rel:?} is a directory, not a file ({e})"))
        }
        Err(e) => Err(format!("{NAME}: cannot read {rel:?}: {e}")),
    }
}
