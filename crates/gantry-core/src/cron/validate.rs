//! Checks on what a client gives for a job, with messages that say how to
//! fix it.

use gantry_types::cron::JobAction;

use super::schedule::shown;
use crate::{Engine, EngineError};

/// Longest accepted job name, in characters.
const MAX_NAME_CHARS: usize = 128;

/// A job name: trimmed, 1 to 128 characters, no control characters.
pub(super) fn name(name: &str) -> Result<String, EngineError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(invalid(
            "the job name is empty; give the job a name".to_owned(),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(invalid(format!(
            "job name {name:?} is invalid: use 1 to {MAX_NAME_CHARS} characters, no control characters",
            name = shown(name)
        )));
    }
    Ok(name.to_owned())
}

/// A time limit in milliseconds: at least 1.
pub(super) fn timeout_ms(timeout_ms: u64) -> Result<u64, EngineError> {
    if timeout_ms == 0 {
        return Err(invalid(
            "the job timeout must be at least 1 ms (default: 60000)".to_owned(),
        ));
    }
    Ok(timeout_ms)
}

/// A job's action: a non-empty command in an existing directory (stored
/// as its canonical path), or a non-empty prompt to an existing thread.
pub(super) async fn action(engine: &Engine, action: JobAction) -> Result<JobAction, EngineError> {
    match action {
        JobAction::Command { command, cwd } => {
            engine
                .shared
                .config
                .check_client_command("a scheduled command job")?;
            if command.trim().is_empty() {
                return Err(invalid(
                    "the job's command is empty; give a shell command line to run".to_owned(),
                ));
            }
            let cwd = match cwd.filter(|c| !c.trim().is_empty()) {
                None => None,
                Some(dir) => Some(
                    std::fs::canonicalize(&dir)
                        .ok()
                        .filter(|p| p.is_dir())
                        .ok_or_else(|| {
                            invalid(format!(
                                "the job's working directory {dir} is not an existing directory",
                                dir = shown(&dir)
                            ))
                        })?
                        .to_string_lossy()
                        .into_owned(),
                ),
            };
            Ok(JobAction::Command { command, cwd })
        }
        JobAction::Prompt { thread_id, prompt } => {
            if prompt.trim().is_empty() {
                return Err(invalid(
                    "the job's prompt is empty; give the message to send".to_owned(),
                ));
            }
            // Fails with "thread not found" for an unknown id.
            engine.threads().read(&thread_id).await?;
            Ok(JobAction::Prompt { thread_id, prompt })
        }
    }
}

fn invalid(message: String) -> EngineError {
    EngineError::InvalidInput(message)
}
