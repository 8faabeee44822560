//! A command run by the host ([`crate::host::CommandRunner`], an editor's
//! terminal) instead of a local bash: the item and the model's output have
//! the same shape as a local run's. The host's terminal is outside
//! Gantry's OS sandbox: a host that supplies a runner confines it itself.
//!
//! The host is another program (an editor): it gets no secret. The
//! variables it is given are the command environment minus every name the
//! child-environment rules hide (`sandbox::child_env`: keys, tokens,
//! passwords, provider key variables), and never the credentials a
//! `CommandEnvSource` minted for local commands. A command in the host's
//! terminal runs with the host's own environment plus these.

use std::path::Path;
use std::time::{Duration, Instant};

use gantry_types::ItemKind;

use super::{HeadTail, fmt_secs, push_note};
use crate::host::{CommandRunner, HostCommand};
use crate::sandbox::child_env;
use crate::{ToolContext, ToolOutput, ToolStatus};

/// Runs `command` through `runner`.
pub(super) async fn run(
    runner: &dyn CommandRunner,
    command: &str,
    cwd: &Path,
    timeout: Duration,
    ctx: &ToolContext,
    started: Instant,
) -> ToolOutput {
    let ran = runner
        .run(HostCommand {
            command,
            cwd,
            env: host_env(ctx),
            call_id: ctx.call_id.as_deref(),
            output: ctx.output.clone(),
            cancel: ctx.cancel.clone(),
            timeout,
            output_cap: ctx.limits.output_cap_bytes,
        })
        .await;
    let elapsed = started.elapsed();
    let item = |output: String, exit_code: Option<i32>| ItemKind::CommandExecution {
        command: command.to_owned(),
        cwd: cwd.display().to_string(),
        process_id: None,
        output,
        exit_code,
        duration_ms: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
    };
    let exit = match ran {
        Ok(exit) => exit,
        Err(e) => {
            let msg = format!("shell: the host could not run the command: {e}");
            return ToolOutput {
                status: ToolStatus::Error,
                model_output: msg.clone(),
                item: item(msg, None),
            };
        }
    };
    let mut kept = HeadTail::new(ctx.limits.output_cap_bytes);
    kept.push(exit.output.as_bytes());
    let mut output = kept.finish();
    let (status, exit_line) = if exit.interrupted {
        push_note(&mut output, "[command interrupted; the host stopped it]");
        (
            ToolStatus::Interrupted,
            "Exit code: none (interrupted)".to_owned(),
        )
    } else if exit.timed_out {
        let note = format!("command timed out after {}", fmt_secs(timeout));
        push_note(&mut output, &format!("[{note}; the host stopped it]"));
        (ToolStatus::Error, format!("Exit code: none ({note})"))
    } else {
        let line = match (exit.exit_code, &exit.signal) {
            (Some(c), _) => format!("Exit code: {c}"),
            (None, Some(sig)) => format!("Exit code: none (killed by signal {sig})"),
            (None, None) => "Exit code: unknown".to_owned(),
        };
        (ToolStatus::Ok, line)
    };
    ToolOutput {
        status,
        model_output: format!(
            "{exit_line}\nWall time: {}\nOutput:\n{output}",
            fmt_secs(elapsed)
        ),
        item: item(output, exit.exit_code),
    }
}

/// The variables a host may see: no secret, no minted credential.
fn host_env(ctx: &ToolContext) -> Vec<(String, String)> {
    ctx.env
        .iter()
        .filter(|(name, value)| !child_env::is_hidden_var(name, std::ffi::OsStr::new(value)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
