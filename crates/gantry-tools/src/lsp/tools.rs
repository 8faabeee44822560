//! The language-server tools the model gets: `lsp_hover`, `lsp_definition`,
//! `lsp_references`, `lsp_symbols`, `lsp_diagnostics`. Read-only; file
//! paths are relative to the workspace (and must stay inside it);
//! positions are 0-indexed.

use std::path::Path;

use async_trait::async_trait;
use gantry_types::lsp::{LspDiagnostic, LspLocation, LspPosition, LspRange, LspSymbol};
use gantry_types::{ItemKind, ToolSpec};
use lsp_types::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::manager::DEFAULT_SYMBOL_LIMIT;
use super::{LspError, LspManager};
use crate::common::{
    parse_args, tool_call_error, tool_call_interrupted, tool_call_output, tool_call_start,
};
use crate::workspace_path;
use crate::{Tool, ToolContext, ToolOutput};

/// Which query a [`LspTool`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LspOp {
    /// `lsp_hover`.
    Hover,
    /// `lsp_definition`.
    Definition,
    /// `lsp_references`.
    References,
    /// `lsp_symbols`.
    Symbols,
    /// `lsp_diagnostics`.
    Diagnostics,
}

impl LspOp {
    /// Every query, in the order tools are listed.
    pub const ALL: [LspOp; 5] = [
        LspOp::Hover,
        LspOp::Definition,
        LspOp::References,
        LspOp::Symbols,
        LspOp::Diagnostics,
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            LspOp::Hover => "lsp_hover",
            LspOp::Definition => "lsp_definition",
            LspOp::References => "lsp_references",
            LspOp::Symbols => "lsp_symbols",
            LspOp::Diagnostics => "lsp_diagnostics",
        }
    }
}

/// One language-server query offered to the model, answered by the
/// server whose root holds the file.
#[derive(Clone)]
pub struct LspTool {
    op: LspOp,
    manager: LspManager,
}

impl LspTool {
    /// The tool for `op`, asking `manager`'s servers.
    pub fn new(op: LspOp, manager: LspManager) -> Self {
        Self { op, manager }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtArgs {
    path: String,
    line: u32,
    character: u32,
    #[serde(default = "yes")]
    include_declaration: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiagnosticArgs {
    #[serde(default)]
    path: Option<String>,
}

const PATH_DOC: &str = "File path, relative to the workspace (or absolute inside it).";
const LINE_DOC: &str = "Line, 0-indexed (the first line is 0).";
const CHAR_DOC: &str = "Character offset in the line, 0-indexed (UTF-16 code units).";

#[async_trait]
impl Tool for LspTool {
    fn spec(&self) -> ToolSpec {
        let at = |extra: Option<(&str, Value)>| {
            let mut props = json!({
                "path": {"type": "string", "description": PATH_DOC},
                "line": {"type": "integer", "minimum": 0, "description": LINE_DOC},
                "character": {"type": "integer", "minimum": 0, "description": CHAR_DOC},
            });
            if let Some((name, schema)) = extra {
                props[name] = schema;
            }
            json!({
                "type": "object",
                "properties": props,
                "required": ["path", "line", "character"],
                "additionalProperties": false
            })
        };
        let (description, parameters) = match self.op {
            LspOp::Hover => (
                "Ask the language server what is at a position in a file: the type, \
                 signature and documentation of the symbol there.",
                at(None),
            ),
            LspOp::Definition => (
                "Ask the language server where the symbol at a position is defined.",
                at(None),
            ),
            LspOp::References => (
                "Ask the language server for every reference to the symbol at a position.",
                at(Some((
                    "include_declaration",
                    json!({"type": "boolean", "description": "Also list the declaration itself (default true)."}),
                ))),
            ),
            LspOp::Symbols => (
                "Search the workspace's symbols (functions, classes, ...) by name with the \
                 language server.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Text the symbol names should match."},
                        "limit": {"type": "integer", "minimum": 1, "description": "Most symbols to return (default 20)."}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            LspOp::Diagnostics => (
                "Ask the language server for errors and warnings: in one file (checked \
                 as it is on disk now), or every file it has checked so far.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to check; omit for every file checked so far."}
                    },
                    "additionalProperties": false
                }),
            ),
        };
        ToolSpec {
            name: self.op.name().into(),
            description: format!(
                "{description} Positions are 0-indexed. Works while a language server runs \
                 for the workspace."
            ),
            parameters,
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        tool_call_start(self.op.name(), args)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let name = self.op.name();
        match self.answer(&args, &ctx).await {
            Ok(text) => tool_call_output(name, &args, Ok(text)),
            Err(Failure::Lsp(LspError::Cancelled)) => tool_call_interrupted(name, &args),
            Err(Failure::Lsp(e)) => tool_call_error(name, &args, e.to_string()),
            Err(Failure::Args(msg)) => tool_call_error(name, &args, msg),
        }
    }
}

enum Failure {
    Args(String),
    Lsp(LspError),
}

impl From<LspError> for Failure {
    fn from(e: LspError) -> Self {
        Failure::Lsp(e)
    }
}

impl LspTool {
    async fn answer(&self, args: &Value, ctx: &ToolContext) -> Result<String, Failure> {
        let ws = ctx.workspace.as_path();
        let m = &self.manager;
        let cancel = &ctx.cancel;
        match self.op {
            LspOp::Hover | LspOp::Definition | LspOp::References => {
                let a: AtArgs = parse_args(self.op.name(), args).map_err(Failure::Args)?;
                let file = inside(ws, &a.path)?;
                let pos = LspPosition {
                    line: a.line,
                    character: a.character,
                };
                let at = format!("{}:{}:{}", a.path, a.line, a.character);
                Ok(match self.op {
                    LspOp::Hover => {
                        let hover = m.hover(&file, pos, cancel).await?;
                        if hover.found {
                            hover.content
                        } else {
                            format!("No hover information at {at}.")
                        }
                    }
                    LspOp::Definition => {
                        let found = m.definition(&file, pos, cancel).await?;
                        locations(&format!("Definition of the symbol at {at}"), &found, ws)
                    }
                    _ => {
                        let found = m
                            .references(&file, pos, a.include_declaration, cancel)
                            .await?;
                        locations(&format!("References to the symbol at {at}"), &found, ws)
                    }
                })
            }
            LspOp::Symbols => {
                let a: SymbolArgs = parse_args(self.op.name(), args).map_err(Failure::Args)?;
                let limit = a.limit.unwrap_or(DEFAULT_SYMBOL_LIMIT).max(1);
                let found = m.symbols(&a.query, limit, Some(ws), cancel).await?;
                Ok(symbols(&a.query, &found, ws))
            }
            LspOp::Diagnostics => {
                let a: DiagnosticArgs = parse_args(self.op.name(), args).map_err(Failure::Args)?;
                let file = a.path.as_deref().map(|p| inside(ws, p)).transpose()?;
                let found = m.diagnostics(file.as_deref(), Some(ws), cancel).await?;
                // Only what is in this workspace: a wider server root may
                // know other files.
                let found: Vec<_> = found
                    .into_iter()
                    .filter(|d| uri_path(&d.uri).is_some_and(|p| p.starts_with(ws)))
                    .collect();
                Ok(diagnostics(a.path.as_deref(), &found, ws))
            }
        }
    }
}

/// `raw` resolved inside the workspace, or why not.
fn inside(ws: &Path, raw: &str) -> Result<std::path::PathBuf, Failure> {
    workspace_path::resolve(ws, raw)
        .map(|p| p.abs)
        .map_err(|e| Failure::Args(e.to_string()))
}

fn uri_path(uri: &str) -> Option<std::path::PathBuf> {
    Url::parse(uri).ok()?.to_file_path().ok()
}

/// A URI as the model should see it: relative to the workspace when inside.
fn show_uri(uri: &str, ws: &Path) -> String {
    match uri_path(uri) {
        Some(p) => match p.strip_prefix(ws) {
            Ok(rel) => workspace_path::display_rel(rel),
            Err(_) => p.display().to_string(),
        },
        None => uri.to_owned(),
    }
}

fn show_range(r: &LspRange) -> String {
    format!(
        "{}:{}-{}:{}",
        r.start.line, r.start.character, r.end.line, r.end.character
    )
}

fn locations(title: &str, found: &[LspLocation], ws: &Path) -> String {
    if found.is_empty() {
        return format!("{title}: none found.");
    }
    let mut out = format!("{title} (0-indexed line:character):");
    for l in found {
        out.push_str(&format!(
            "\n{}:{}",
            show_uri(&l.uri, ws),
            show_range(&l.range)
        ));
    }
    out
}

fn symbols(query: &str, found: &[LspSymbol], ws: &Path) -> String {
    if found.is_empty() {
        return format!("No symbols match {query:?}.");
    }
    let mut out = format!("Symbols matching {query:?} (0-indexed line:character):");
    for s in found {
        out.push_str(&format!(
            "\n{} {} {}:{}",
            s.kind,
            s.name,
            show_uri(&s.location.uri, ws),
            show_range(&s.location.range)
        ));
        if let Some(c) = &s.container_name {
            out.push_str(&format!(" (in {c})"));
        }
    }
    out
}

fn diagnostics(path: Option<&str>, found: &[LspDiagnostic], ws: &Path) -> String {
    if found.is_empty() {
        return match path {
            Some(p) => format!("No problems reported in {p}."),
            None => "No problems reported.".to_owned(),
        };
    }
    let mut out = "Problems (0-indexed line:character):".to_owned();
    for d in found {
        out.push_str(&format!(
            "\n{}:{}:{} {}",
            show_uri(&d.uri, ws),
            d.range.start.line,
            d.range.start.character,
            d.severity
        ));
        match (&d.source, &d.code) {
            (Some(s), Some(c)) => out.push_str(&format!(" [{s} {c}]")),
            (Some(s), None) => out.push_str(&format!(" [{s}]")),
            (None, Some(c)) => out.push_str(&format!(" [{c}]")),
            (None, None) => {}
        }
        out.push_str(&format!(": {}", d.message));
    }
    out
}
