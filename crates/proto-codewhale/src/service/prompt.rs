//! `PromptRequest`: one real turn, answered with the agent's last message
//! and the turn's frames. Without a thread, the prompt gets a thread of
//! its own, kept like any other (its conversation can be read and forked).

use gantry_core::projection::{Part, Role, conversation};
use gantry_core::{CreateThread, EngineError, IfBusy, UserInput};
use gantry_types::{ThreadId, TurnId};

use super::{CodeWhale, ServiceError};
use crate::frames::{FrameFeed, ResumePoint};
use crate::wire::{EventFrame, PromptRequest, PromptResponse};

impl CodeWhale {
    /// Runs `req`'s turn to its end.
    pub async fn prompt(&self, req: PromptRequest) -> Result<PromptResponse, ServiceError> {
        self.prompt_traced(req, None).await
    }

    /// Runs `req`'s turn to its end; the turn keeps the W3C `traceparent`
    /// `trace_parent` (already checked) the request came with.
    pub async fn prompt_traced(
        &self,
        req: PromptRequest,
        trace_parent: Option<String>,
    ) -> Result<PromptResponse, ServiceError> {
        let thread = match &req.thread_id {
            Some(id) => {
                if self.view(id).await?.is_none() {
                    // The reference fails here inside its runtime: -32603.
                    return Err(ServiceError::Internal(format!("thread `{id}` not found")));
                }
                ThreadId(id.clone())
            }
            None => {
                let create = CreateThread {
                    cwd: self.inner.workspace.clone(),
                    model: req.model.clone(),
                    policy: self.policy_of(Default::default(), None, None, true)?,
                    ..CreateThread::default()
                };
                self.engine().threads().create(create).await?.id
            }
        };
        let start = self.engine().threads().read(&thread).await?.thread.last_seq;
        let mut feed = FrameFeed::open(self.engine(), &thread, ResumePoint::after(start)).await?;
        let input = UserInput {
            text: req.prompt,
            trace_parent,
            ..UserInput::default()
        };
        let turn = self
            .engine()
            .turns()
            .send_input(&thread, input, IfBusy::Queue)
            .await?;
        let events = collect_turn(&mut feed, &turn).await?;
        let view = self.engine().threads().read(&thread).await?;
        let output = last_answer(&view, &turn);
        Ok(PromptResponse {
            output,
            model: view.thread.model.clone(),
            events,
        })
    }
}

/// The frames of `turn`, up to its end.
async fn collect_turn(
    feed: &mut FrameFeed,
    turn: &TurnId,
) -> Result<Vec<EventFrame>, ServiceError> {
    let mut frames = Vec::new();
    let mut inside = false;
    loop {
        let Some(batch) = feed.next().await? else {
            return Err(EngineError::ShuttingDown.into());
        };
        for framed in batch {
            let ends = match &framed.frame {
                EventFrame::TurnStarted { turn_id } if turn_id == &turn.0 => {
                    inside = true;
                    false
                }
                EventFrame::TurnComplete { turn_id } | EventFrame::TurnAborted { turn_id, .. } => {
                    turn_id == &turn.0
                }
                _ => false,
            };
            if inside {
                frames.push(framed.frame);
            }
            if ends {
                return Ok(frames);
            }
        }
    }
}

/// The text of the last assistant message of `turn`.
fn last_answer(view: &gantry_types::ThreadView, turn: &TurnId) -> String {
    conversation(view)
        .iter()
        .rev()
        .filter(|m| &m.turn_id == turn && m.role == Role::Assistant)
        .find_map(|m| {
            let text: String = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then_some(text)
        })
        .unwrap_or_default()
}
