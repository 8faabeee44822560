//! `read_file`: a text file's lines, numbered like `cat -n`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use async_trait::async_trait;
use gantry_types::{ItemKind, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{
    parse_args, run_blocking, tool_call_interrupted, tool_call_output, tool_call_start,
    truncate_chars,
};
use crate::workspace_path::{self, WorkspacePath};
use crate::{Tool, ToolContext, ToolOutput};

const NAME: &str = "read_file";
/// Lines shown when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut (minified files would otherwise flood the context).
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of numbered output returned at most, whatever `limit` says.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// How much of the file is sniffed for NUL bytes to spot binaries.
const SNIFF_BYTES: u64 = 8192;

/// The `read_file` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFileTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

#[async_trait]
impl Tool for ReadFileTool {
    fn has_side_effects(&self) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Read a text file in the workspace. Lines are numbered like `cat -n` \
                          (number, tab, text). Reads 2000 lines by default; use offset/limit \
                          for other ranges."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace (or absolute inside it)."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to show, 1-based (default 1)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show (default 2000)."}
                },
                "required": ["path"],
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
            Ok((path, offset, limit)) => match &ctx.host.files {
                // The host's text (an editor's buffer, unsaved changes included).
                Some(files) => match files.read_text(&path.abs).await {
                    Ok(text) => number_lines(&path.rel, text.as_bytes(), offset, limit),
                    Err(e) => Err(format!("{NAME}: cannot read {:?}: {e}", path.rel)),
                },
                None => {
                    match run_blocking(&ctx.cancel, move |_| read_lines(&path, offset, limit)).await
                    {
                        Some(r) => r,
                        None => return tool_call_interrupted(NAME, &args),
                    }
                }
            },
        };
        tool_call_output(NAME, &args, result)
    }
}

fn prepare(args: &Value, ctx: &ToolContext) -> Result<(WorkspacePath, u64, u64), String> {
    let a: ReadArgs = parse_args(NAME, args)?;
    let offset = match a.offset {
        Some(0) => return Err("read_file: `offset` is 1-based; use 1 for the first line".into()),
        Some(n) => n,
        None => 1,
    };
    let limit = match a.limit {
        Some(0) => return Err("read_file: `limit` must be at least 1".into()),
        Some(n) => n,
        None => DEFAULT_LIMIT,
    };
    let path =
        workspace_path::resolve(&ctx.workspace, &a.path).map_err(|e| format!("read_file: {e}"))?;
    Ok((path, offset, limit))
}

fn read_lines(path: &WorkspacePath, offset: u64, limit: u64) -> Result<String, String> {
    let rel = &path.rel;
    // Opened beneath the workspace: a symlink swapped in since the check
    // cannot take the read outside it. Everything below uses this handle.
    let mut file = path.open_read().map_err(|e| open_error(rel, &e))?;
    let meta = file.metadata().map_err(|e| open_error(rel, &e))?;
    if meta.is_dir() {
        return Err(format!(
            "read_file: {rel:?} is a directory, not a file; use list_dir to see its entries"
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "read_file: {rel:?} is not a regular file (device, fifo or socket); refusing to read it"
        ));
    }
    if is_binary(&mut file).map_err(|e| open_error(rel, &e))? {
        return Err(format!(
            "read_file: {rel:?} looks like a binary file ({} bytes, contains NUL bytes); read_file only shows text. \
             Use the shell (e.g. `file`, `xxd | head`) to inspect it.",
            meta.len()
        ));
    }
    number_lines(rel, BufReader::new(file), offset, limit)
}

/// The lines `offset..offset + limit` of `reader`, numbered like `cat -n`.
fn number_lines(
    rel: &str,
    mut reader: impl BufRead,
    offset: u64,
    limit: u64,
) -> Result<String, String> {
    let mut line = Vec::new();
    let mut out = String::new();
    let mut lineno: u64 = 0;
    let mut last_shown: u64 = 0;
    let mut cut_by_size = false;
    let end = offset.saturating_add(limit);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("read_file: error reading {rel:?}: {e}"))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if lineno < offset || lineno >= end || cut_by_size {
            continue; // still counted, for the "more lines" note
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let text = String::from_utf8_lossy(&line);
        let entry = format!("{lineno:>6}\t{}\n", truncate_chars(&text, MAX_LINE_CHARS));
        if out.len() + entry.len() > MAX_OUTPUT_BYTES && last_shown > 0 {
            cut_by_size = true;
            continue;
        }
        out.push_str(&entry);
        last_shown = lineno;
    }
    let total = lineno;
    if total == 0 {
        return Ok(format!("({rel} is empty)"));
    }
    if offset > total {
        return Err(format!(
            "read_file: offset {offset} is past the end of {rel:?}, which has {total} lines; use an offset from 1 to {total}"
        ));
    }
    if last_shown < total {
        out.push_str(&format!(
            "... {} more lines (file has {total} lines{}); use offset={} to read on\n",
            total - last_shown,
            if cut_by_size {
                ", output size limit reached"
            } else {
                ""
            },
            last_shown + 1
        ));
    }
    Ok(out)
}

/// A NUL byte near the start is the same heuristic git and ripgrep use.
/// Leaves `file` rewound to its start.
fn is_binary(file: &mut File) -> std::io::Result<bool> {
    let mut head = Vec::new();
    Read::by_ref(file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(head.contains(&0))
}

fn open_error(rel: &str, e: &std::io::Error) -> String {
    if workspace_path::is_escape(e) {
        format!("read_file: {e}")
    } else if e.kind() == std::io::ErrorKind::NotFound {
        format!("read_file: {rel:?} does not exist; use list_dir or glob to find the right path")
    } else {
        format!("read_file: cannot read {rel:?}: {e}")
    }
}
