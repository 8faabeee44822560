//! The shell tool's commands in the client's terminals: `terminal/create`
//! (`bash -c` the command line), the terminal shown under its tool call at
//! once (the editor shows it live), `terminal/wait_for_exit` (or
//! `terminal/kill` on interrupt or timeout) while `terminal/output` is
//! polled for the engine's command output deltas (so the thread's other
//! clients see the output live too), `terminal/output` once more for what
//! the model gets, then `terminal/release`. The variables sent with
//! `terminal/create` hold no secret (`gantry_tools`' `shell/hosted.rs`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gantry_core::{CommandExit, CommandRunner, HostCommand, OutputSink};
use serde_json::Value;

use super::live_output::Streamed;
use crate::rpc::Peer;
use crate::session::Session;
use crate::wire::{
    CreateTerminalRequest, CreateTerminalResponse, EnvVariable, SessionNotification, SessionUpdate,
    TerminalExitStatus, TerminalOutputResponse, TerminalRequest, ToolCallContent, ToolCallUpdate,
};

/// One session's commands, through its client.
pub(crate) struct ClientTerminal {
    peer: Peer,
    session: Arc<Session>,
}

impl ClientTerminal {
    pub(crate) fn new(peer: Peer, session: Arc<Session>) -> Self {
        Self { peer, session }
    }

    fn terminal(&self, terminal_id: &str) -> TerminalRequest {
        TerminalRequest {
            session_id: self.session.id.0.clone(),
            terminal_id: terminal_id.to_owned(),
        }
    }

    /// Asks for the terminal's output so far and passes on what is new.
    async fn pass_on(&self, id: &str, streamed: &mut Streamed, sink: &OutputSink) {
        let output = self
            .peer
            .request::<TerminalOutputResponse>("terminal/output", self.terminal(id))
            .await;
        if let Ok(output) = output
            && let Some(new) = streamed.next(&output.output)
        {
            sink(new).await;
        }
    }
}

/// How often a running command's output is asked for: live enough for a
/// reader, few enough round trips for the editor.
const OUTPUT_POLL: Duration = Duration::from_millis(200);

#[async_trait]
impl CommandRunner for ClientTerminal {
    async fn run(&self, command: HostCommand<'_>) -> Result<CommandExit, String> {
        let create = CreateTerminalRequest {
            session_id: self.session.id.0.clone(),
            command: "bash".to_owned(),
            args: vec!["-c".to_owned(), command.command.to_owned()],
            env: command
                .env
                .iter()
                .map(|(name, value)| EnvVariable {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            cwd: command.cwd.to_string_lossy().into_owned(),
            output_byte_limit: command.output_cap as u64,
        };
        let created: CreateTerminalResponse = self
            .peer
            .request("terminal/create", create)
            .await
            .map_err(|e| format!("terminal/create failed: {}", e.message))?;
        let id = created.terminal_id;
        if let Some(call_id) = command.call_id {
            self.session
                .terminals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(call_id.to_owned(), id.clone());
            // Shown under the call while it runs.
            let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: call_id.to_owned(),
                content: Some(vec![ToolCallContent::Terminal {
                    terminal_id: id.clone(),
                }]),
                ..ToolCallUpdate::default()
            });
            let note = SessionNotification {
                session_id: self.session.id.0.clone(),
                update,
            };
            self.peer.notify("session/update", note).await;
        }
        let wait = self
            .peer
            .request::<TerminalExitStatus>("terminal/wait_for_exit", self.terminal(&id));
        tokio::pin!(wait);
        let timeout = tokio::time::sleep(command.timeout);
        tokio::pin!(timeout);
        let mut poll = tokio::time::interval(OUTPUT_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut streamed = Streamed::default();
        let (mut status, interrupted, timed_out) = loop {
            tokio::select! {
                waited = &mut wait => break (waited.ok(), false, false),
                _ = command.cancel.cancelled() => break (None, true, false),
                _ = &mut timeout => break (None, false, true),
                _ = poll.tick() => self.pass_on(&id, &mut streamed, &command.output).await,
            }
        };
        if interrupted || timed_out {
            let _ = self
                .peer
                .request::<Value>("terminal/kill", self.terminal(&id))
                .await;
        }
        let output = self
            .peer
            .request::<TerminalOutputResponse>("terminal/output", self.terminal(&id))
            .await
            .ok();
        let _ = self
            .peer
            .request::<Value>("terminal/release", self.terminal(&id))
            .await;
        let (text, exit_status) = match output {
            Some(o) => (o.output, o.exit_status),
            None => (String::new(), None),
        };
        if let Some(rest) = streamed.next(&text) {
            (command.output)(rest).await;
        }
        if status.is_none() {
            status = exit_status;
        }
        let status = status.unwrap_or_default();
        Ok(CommandExit {
            output: text,
            exit_code: status.exit_code.and_then(|c| i32::try_from(c).ok()),
            signal: status.signal,
            interrupted,
            timed_out,
        })
    }
}
