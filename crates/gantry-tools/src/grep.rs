//! `grep`: regex search over files with ripgrep's engine, respecting `.gitignore`.

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{
    parse_args, run_blocking, tool_call_interrupted, tool_call_output, tool_call_start,
    truncate_chars,
};
use crate::walk::{rel_to, walker};
use crate::workspace_path::{self, WorkspaceDir, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "grep";
/// Matching lines returned when the model gives no `max_results`.
const DEFAULT_MAX_RESULTS: usize = 200;
/// Upper bound on `max_results`, whatever the model asks.
const MAX_MAX_RESULTS: usize = 5000;
/// Matching lines longer than this are cut.
const MAX_LINE_CHARS: usize = 500;

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for GrepTool {
    fn has_side_effects(&self) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Search file contents with a regular expression (Rust regex syntax, like \
                          ripgrep). Prints `path:line:text` for each matching line. Skips binary, \
                          hidden and .gitignore'd files."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory to search, relative to the workspace (default \".\")."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, like `rg -g` (e.g. \"*.rs\", \"src/**/*.ts\")."},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_RESULTS, "description": "Maximum matching lines to return (default 200)."}
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
    matcher: RegexMatcher,
    overrides: Option<Override>,
    root: WorkspacePath,
    workspace: WorkspacePath,
    max_results: usize,
}

fn prepare(args: &Value, ctx: &ToolContext) -> Result<Prepared, String> {
    let a: GrepArgs = parse_args(NAME, args)?;
    let max_results = a.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
    if !(1..=MAX_MAX_RESULTS).contains(&max_results) {
        return Err(format!(
            "{NAME}: `max_results` must be between 1 and {MAX_MAX_RESULTS}, got {max_results}"
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(a.case_insensitive)
        // Matches never span lines, so `\n` in a pattern is rejected up front
        // instead of silently matching nothing.
        .line_terminator(Some(b'\n'))
        .build(&a.pattern)
        .map_err(|e| {
            format!(
                "{NAME}: invalid regex {:?}: {e}. The syntax is Rust's regex crate (like ripgrep); \
                 escape special characters such as ( ) [ ] {{ }} . * + ? with a backslash to match them literally",
                a.pattern
            )
        })?;
    let root = workspace_path::resolve(&ctx.workspace, a.path.as_deref().unwrap_or("."))
        .map_err(|e| format!("{NAME}: {e}"))?;
    let workspace =
        workspace_path::resolve(&ctx.workspace, ".").map_err(|e| format!("{NAME}: {e}"))?;
    let overrides = match a.glob.as_deref() {
        None | Some("") => None,
        Some(g) => {
            // The same include-glob semantics as `rg -g`: a pattern without `/`
            // matches file names at any depth.
            let base = if root.abs.is_dir() {
                root.abs.clone()
            } else {
                workspace.abs.clone()
            };
            let built = OverrideBuilder::new(base)
                .add(g)
                .and_then(|b| b.build())
                .map_err(|e| format!("{NAME}: invalid glob {g:?}: {e}"))?;
            Some(built)
        }
    };
    Ok(Prepared {
        pattern: a.pattern,
        matcher,
        overrides,
        root,
        workspace,
        max_results,
    })
}

fn search(p: Prepared, cancel: &CancellationToken) -> Result<String, String> {
    if !p.root.abs.exists() {
        return Err(format!("{NAME}: {:?} does not exist", p.root.rel));
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    // Files are opened beneath the workspace's fd, not by the walker's path:
    // a directory swapped for a symlink mid-walk cannot take a read outside.
    let dir = WorkspaceDir::open(&p.workspace.abs)
        .map_err(|e| format!("{NAME}: cannot open the workspace: {e}"))?;
    let mut walk = walker(&p.root.abs, true);
    if let Some(o) = p.overrides.clone() {
        walk.overrides(o);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut capped = false;
    let mut errors = 0usize;
    'files: for entry in walk.build() {
        if cancel.is_cancelled() {
            return Err(format!("{NAME}: interrupted"));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = rel_to(&p.workspace.abs, entry.path());
        let Ok(file) = dir.open_read(entry.path()) else {
            // Unreadable or leading out: skipped and counted, like read errors.
            errors += 1;
            continue;
        };
        let mut file_capped = false;
        let res = searcher.search_file(
            &p.matcher,
            &file,
            Lossy(|lnum, line| {
                if lines.len() >= p.max_results {
                    file_capped = true;
                    return Ok(false);
                }
                let text = line.trim_end_matches(['\n', '\r']);
                lines.push(format!(
                    "{rel}:{lnum}:{}",
                    truncate_chars(text, MAX_LINE_CHARS)
                ));
                Ok(true)
            }),
        );
        if res.is_err() {
            // Unreadable files are skipped; the count is reported below.
            errors += 1;
        }
        if file_capped {
            capped = true;
            break 'files;
        }
    }
    let mut out = if lines.is_empty() {
        format!(
            "No matches for {:?} under {:?} (binary, hidden and .gitignore'd files are skipped).\n",
            p.pattern, p.root.rel
        )
    } else {
        let mut s = lines.join("\n");
        s.push('\n');
        s
    };
    if capped {
        out.push_str(&format!(
            "[results capped at {} matching lines; narrow the pattern, path or glob, or raise max_results]\n",
            p.max_results
        ));
    }
    if errors > 0 {
        out.push_str(&format!(
            "[{errors} file(s) could not be read and were skipped]\n"
        ));
    }
    Ok(out)
}
