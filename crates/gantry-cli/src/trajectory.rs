//! ATIF trajectories of threads (`gantry threads export`, `gantry exec
//! --trajectory`), and writing a file whole or not at all.

use std::path::Path;

use anyhow::{Context, Result};
use gantry_core::Engine;
use gantry_types::ThreadId;

/// The agent name ATIF records.
pub(crate) const AGENT_NAME: &str = "gantry";

/// The thread's trajectory, from its stored event log.
pub(crate) async fn of(engine: &Engine, id: &ThreadId) -> Result<gantry_atif::Trajectory> {
    let events = engine.threads().events(id).await?;
    // The engine's catalog first (the config's overrides), else the
    // built-in one: a `threads` command's engine serves no model.
    let price = |model: &str| {
        engine
            .providers()
            .model_info(model)
            .or_else(|| gantry_llm::catalog::Catalog::builtin().get(model).cloned())
            .map(|info| info.cost)
    };
    let tools = engine.tool_specs();
    let agent = gantry_atif::AgentInfo {
        name: AGENT_NAME,
        version: env!("CARGO_PKG_VERSION"),
        tools: Some(&tools),
        price: &price,
    };
    Ok(gantry_atif::trajectory(&events, &agent)?)
}

/// The trajectory as the file holds it: pretty JSON, a final newline.
pub(crate) fn to_json(trajectory: &gantry_atif::Trajectory) -> Result<Vec<u8>> {
    let mut json = serde_json::to_vec_pretty(trajectory)?;
    json.push(b'\n');
    Ok(json)
}

/// Writes `bytes` to `path` through a temp file beside it and a rename: a
/// reader (a harness collecting results) sees the old file or the whole
/// new one, never half of it.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = std::fs::write(&tmp, bytes)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path)
                .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
        });
    if written.is_err() {
        // Nothing half written stays behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
