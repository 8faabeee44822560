//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gantry_tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;

/// A context for `dir`, canonicalized as the engine would.
/// A context in `dir` whose commands get a bare `HOME`: this machine's
/// login profile (which may run `pyenv rehash` and leave its lock behind
/// when a test kills a command) stays out of the tests.
pub(crate) fn ctx(dir: &Path) -> ToolContext {
    static BARE_HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = BARE_HOME.get_or_init(|| tempfile::tempdir().expect("bare home"));
    let mut c = ToolContext::new(canon(dir));
    c.env = Arc::new(std::collections::BTreeMap::from([(
        "HOME".to_owned(),
        home.path().display().to_string(),
    )]));
    c
}

/// [`ctx`] unsandboxed, then under `workspace-write` when this machine can
/// enforce it: the shell starts its `bash` differently in each (see
/// `shell/spawn.rs`), and both must behave the same.
pub(crate) fn ctx_each_start(dir: &Path) -> Vec<ToolContext> {
    let plain = ctx(dir);
    // Not a clone: each gets its own cancel token.
    let mut sandboxed = ctx(dir);
    sandboxed.sandbox = gantry_tools::SandboxPolicy::new(
        gantry_types::SandboxMode::WorkspaceWrite,
        &sandboxed.workspace,
    );
    match gantry_tools::SandboxSupport::probe().problem {
        None => vec![plain, sandboxed],
        Some(reason) => {
            eprintln!("only unsandboxed: the sandbox cannot be enforced here: {reason}");
            vec![plain]
        }
    }
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
