//! `glob`: files whose path matches a glob pattern, respecting `.gitignore`.

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{
    parse_args, run_blocking, tool_call_interrupted, tool_call_output, tool_call_start,
};
use crate::walk::{rel_to, walker};
use crate::workspace_path::{self, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "glob";
/// Paths returned at most.
const MAX_MATCHES: usize = 1000;

/// The `glob` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[async_trait]
impl Tool for GlobTool {
    fn has_side_effects(&self) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Find files by glob pattern, matched against paths relative to `path` \
                          (`*` stays within a directory, `**` crosses directories: `**/*.rs`, \
                          `src/**/mod.rs`, `*.{js,ts}`). Skips hidden and .gitignore'd files. \
                          Returns workspace-relative paths, sorted."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.rs\"."},
                    "path": {"type": "string", "description": "Directory to search, relative to the workspace (default \".\")."}
                },
                "required": ["pattern"],
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
            Ok(p) => match run_blocking(&ctx.cancel, move |cancel| search(p, &cancel)).await {
                Some(r) => r,
                None => return tool_call_interrupted(NAME, &args),
            },
        };
        tool_call_output(NAME, &args, result)
    }
}

struct Prepared {
    pattern: String,
    matcher: GlobMatcher,
    root: WorkspacePath,
    workspace: WorkspacePath,
}

fn prepare(args: &Value, ctx: &ToolContext) -> Result<Prepared, String> {
    let a: GlobArgs = parse_args(NAME, args)?;
    // Models often write `./src/*.rs`; paths are matched without the `./`.
    let pattern = a.pattern.trim_start_matches("./");
    if pattern.is_empty() {
        return Err(format!(
            "{NAME}: `pattern` is empty; give a glob such as \"**/*.rs\""
        ));
    }
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("{NAME}: invalid glob pattern {pattern:?}: {e}"))?
        .compile_matcher();
    let root = workspace_path::resolve(&ctx.workspace, a.path.as_deref().unwrap_or("."))
        .map_err(|e| format!("{NAME}: {e}"))?;
    let workspace =
        workspace_path::resolve(&ctx.workspace, ".").map_err(|e| format!("{NAME}: {e}"))?;
    Ok(Prepared {
        pattern: pattern.to_string(),
        matcher,
        root,
        workspace,
    })
}

fn search(p: Prepared, cancel: &CancellationToken) -> Result<String, String> {
    if !p.root.abs.is_dir() {
        return Err(format!(
            "{NAME}: {:?} is not an existing directory",
            p.root.rel
        ));
    }
    let mut found = Vec::new();
    let mut capped = false;
    for entry in walker(&p.root.abs, true).build() {
        if cancel.is_cancelled() {
            return Err(format!("{NAME}: interrupted"));
        }
        let Ok(entry) = entry else { continue };
        if !entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&p.root.abs) else {
            continue;
        };
        if p.matcher.is_match(rel) {
            if found.len() >= MAX_MATCHES {
                capped = true;
                break;
            }
            found.push(rel_to(&p.workspace.abs, entry.path()));
        }
    }
    if found.is_empty() {
        return Ok(format!(
            "No files match {:?} under {:?} (hidden and .gitignore'd files are skipped; `*` does not cross `/`, use `**/` for any depth).",
            p.pattern, p.root.rel
        ));
    }
    found.sort();
    let mut out = found.join("\n");
    out.push('\n');
    if capped {
        out.push_str(&format!(
            "[capped at {MAX_MATCHES} files; use a narrower pattern or path]\n"
        ));
    }
    Ok(out)
}
