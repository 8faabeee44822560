//! Helpers shared by the built-in tools: argument parsing, result shaping,
//! blocking work that honours cancellation.

use gantry_types::ItemKind;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{ToolOutput, ToolStatus};

/// Parses `args` into the tool's argument struct. The serde message names the
/// missing field or the wrong type, which is what the model needs to retry.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, String> {
    if !args.is_object() {
        return Err(format!(
            "invalid arguments for {tool}: expected a JSON object with the tool's parameters, \
             got {}",
            json_type(args)
        ));
    }
    // serde_path_to_error names the offending field ("path: invalid type..."),
    // which plain serde does not for type errors.
    serde_path_to_error::deserialize(args).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let at = if field == "." { String::new() } else { format!("field `{field}`: ") };
        format!(
            "invalid arguments for {tool}: {at}{inner}; call it again with arguments that match its schema"
        )
    })
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A `ToolCall` item and model output for a generic tool's result.
pub(crate) fn tool_call_output(
    name: &str,
    args: &Value,
    result: Result<String, String>,
) -> ToolOutput {
    match result {
        Ok(text) => ToolOutput {
            status: ToolStatus::Ok,
            model_output: text.clone(),
            item: ItemKind::ToolCall {
                name: name.to_string(),
                arguments: args.clone(),
                result: Some(text),
                error: None,
            },
        },
        Err(msg) => tool_call_error(name, args, msg),
    }
}

/// A failed `ToolCall` item; the message goes to the model as is.
pub(crate) fn tool_call_error(name: &str, args: &Value, msg: String) -> ToolOutput {
    ToolOutput {
        status: ToolStatus::Error,
        model_output: msg.clone(),
        item: ItemKind::ToolCall {
            name: name.to_string(),
            arguments: args.clone(),
            result: None,
            error: Some(msg),
        },
    }
}

/// An interrupted `ToolCall` item.
pub(crate) fn tool_call_interrupted(name: &str, args: &Value) -> ToolOutput {
    let msg = "interrupted".to_string();
    ToolOutput {
        status: ToolStatus::Interrupted,
        model_output: msg.clone(),
        item: ItemKind::ToolCall {
            name: name.to_string(),
            arguments: args.clone(),
            result: None,
            error: Some(msg),
        },
    }
}

/// The in-progress `ToolCall` item.
pub(crate) fn tool_call_start(name: &str, args: &Value) -> ItemKind {
    ItemKind::ToolCall {
        name: name.to_string(),
        arguments: args.clone(),
        result: None,
        error: None,
    }
}

/// Runs blocking filesystem work off the async threads. Returns `None` if
/// `cancel` fires first; the closure gets the token so long walks can stop
/// early instead of running on unobserved.
pub(crate) async fn run_blocking<T, F>(
    cancel: &CancellationToken,
    f: F,
) -> Option<Result<T, String>>
where
    T: Send + 'static,
    F: FnOnce(CancellationToken) -> Result<T, String> + Send + 'static,
{
    let token = cancel.clone();
    let handle = tokio::task::spawn_blocking(move || f(token));
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        joined = handle => Some(joined.unwrap_or_else(|e| Err(format!("internal error: tool task failed: {e}")))),
    }
}

/// `s` cut to at most `max` characters, with a note when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!(
            "{}... [line truncated, {} chars total]",
            &s[..idx],
            s.chars().count()
        ),
        None => s.to_string(),
    }
}

/// Unified diff of a file change; `old` is `None` for a new file.
pub(crate) fn unified_diff(rel: &str, old: Option<&str>, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new);
    let from = if old.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_string()
    };
    diff.unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{rel}"))
        .to_string()
}

/// A `FileChange` result: the item carries the diff, the model a summary.
pub(crate) fn file_change_output(rel: &str, diff: String, summary: String) -> ToolOutput {
    ToolOutput {
        status: ToolStatus::Ok,
        model_output: summary,
        item: ItemKind::FileChange {
            path: rel.to_string(),
            diff,
        },
    }
}

/// A failed file change. The item keeps its kind (it started as a
/// `FileChange`) with an empty diff; the message reaches the model (and the
/// item's tool-call record) through `model_output`.
pub(crate) fn file_change_error(args: &Value, msg: String) -> ToolOutput {
    ToolOutput {
        status: ToolStatus::Error,
        model_output: msg,
        item: file_change_start(args),
    }
}

/// A `FileChange` item for a call that was interrupted before it changed anything.
pub(crate) fn file_change_interrupted(args: &Value) -> ToolOutput {
    ToolOutput {
        status: ToolStatus::Interrupted,
        model_output: "interrupted; the file was not changed".to_string(),
        item: file_change_start(args),
    }
}

/// The in-progress `FileChange` item: the path as given, no diff yet.
pub(crate) fn file_change_start(args: &Value) -> ItemKind {
    ItemKind::FileChange {
        path: args
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        diff: String::new(),
    }
}
