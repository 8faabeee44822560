//! `list_dir`: a directory's entries, a few levels deep, respecting `.gitignore`.

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    parse_args, run_blocking, tool_call_interrupted, tool_call_output, tool_call_start,
};
use crate::walk::{rel_to, walker};
use crate::workspace_path::{self, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "list_dir";
/// Deepest listing allowed; deeper trees flood the context, glob is better there.
const MAX_DEPTH: usize = 5;
/// Entries shown at most.
const MAX_ENTRIES: usize = 1000;

/// The `list_dir` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDirTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    depth: Option<usize>,
}

#[async_trait]
impl Tool for ListDirTool {
    fn has_side_effects(&self) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "List a directory's entries, sorted, directories ending in `/`, paths \
                          relative to the listed directory. Skips files ignored by .gitignore."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory, relative to the workspace (default \".\")."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to descend (default 1, at most 5)."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        tool_call_start(NAME, args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let result = match prepare(&args, &ctx) {
            Err(msg) => Err(msg),
            Ok((dir, depth)) => {
                match run_blocking(&ctx.cancel, move |cancel| list(&dir, depth, &cancel)).await {
                    Some(r) => r,
                    None => return tool_call_interrupted(NAME, &args),
                }
            }
        };
        tool_call_output(NAME, &args, result)
    }
}

fn prepare(args: &Value, ctx: &ToolContext) -> Result<(WorkspacePath, usize), String> {
    let a: ListArgs = parse_args(NAME, args)?;
    let depth = a.depth.unwrap_or(1);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(format!(
            "{NAME}: `depth` must be between 1 and {MAX_DEPTH}, got {depth}"
        ));
    }
    let raw = a.path.as_deref().unwrap_or(".");
    let dir = workspace_path::resolve(&ctx.workspace, raw).map_err(|e| format!("{NAME}: {e}"))?;
    Ok((dir, depth))
}

fn list(
    dir: &WorkspacePath,
    depth: usize,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, String> {
    let rel = &dir.rel;
    match std::fs::metadata(&dir.abs) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{NAME}: {rel:?} is a file, not a directory; use read_file to read it"
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{NAME}: directory {rel:?} does not exist"));
        }
        Err(e) => return Err(format!("{NAME}: cannot list {rel:?}: {e}")),
    }
    let mut entries = Vec::new();
    let mut capped = false;
    // Hidden entries are shown (`.github/`, `.env.example` matter); `.git` is not.
    for entry in walker(&dir.abs, false).max_depth(Some(depth)).build() {
        if cancel.is_cancelled() {
            return Err(format!("{NAME}: interrupted"));
        }
        // Unreadable entries (permissions, races) are skipped, not fatal.
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= MAX_ENTRIES {
            capped = true;
            break;
        }
        let mut name = rel_to(&dir.abs, entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            name.push('/');
        }
        entries.push(name);
    }
    if entries.is_empty() {
        return Ok(format!("{rel}/ is empty (or all its entries are ignored)"));
    }
    let mut out = entries.join("\n");
    out.push('\n');
    if capped {
        out.push_str(&format!(
            "[listing capped at {MAX_ENTRIES} entries; list a subdirectory or use a smaller depth]\n"
        ));
    }
    Ok(out)
}
