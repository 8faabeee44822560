//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gantry_tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;

/// A context for `dir`, canonicalized as the engine would.
pub(crate) fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(canon(dir))
}

pub(crate) fn canon(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap()
}

/// A context whose streamed output is collected.
pub(crate) fn ctx_collecting(dir: &Path) -> (ToolContext, Arc<Mutex<Vec<String>>>) {
    let mut c = ctx(dir);
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let d = deltas.clone();
    c.output = gantry_tools::output_sink(move |s: &str| d.lock().unwrap().push(s.to_string()));
    (c, deltas)
}

pub(crate) async fn call(tool: &dyn Tool, dir: &Path, args: Value) -> ToolOutput {
    let c = ctx(dir);
    // start_item must never panic either, whatever the arguments.
    let _ = tool.start_item(&args, &c);
    tool.run(args, c).await
}

/// The `result` of a ToolCall item (panics otherwise).
pub(crate) fn result_text(out: &ToolOutput) -> String {
    match &out.item {
        gantry_types::ItemKind::ToolCall {
            result: Some(r), ..
        } => r.clone(),
        other => panic!("expected a ToolCall with a result, got {other:?}"),
    }
}
