//! `session/prompt`: the message starts a turn; its notifications stream
//! as `session/update`s until it ends, then the usage and the answer
//! (`stopReason`). An approval or a question the turn waits for is asked
//! of the user meanwhile, on a task of its own, so a cancel still gets
//! through.

use std::sync::Arc;

use gantry_core::{IfBusy, Notification, UserInput};
use gantry_types::{EventPayload, ItemKind, ItemStatus, TurnFailure, TurnStatus};

use super::input::prompt_input;
use super::{Agent, Session, elicit, engine_error, permission};
use crate::rpc::RpcError;
use crate::updates::UpdateMapper;
use crate::wire::{
    Cost, PromptRequest, PromptResponse, PromptUsage, SessionNotification, SessionUpdate,
    StopReason,
};

/// Clears a session's prompt flag however the prompt ends.
struct Prompting<'a>(&'a Session);

impl Drop for Prompting<'_> {
    fn drop(&mut self) {
        *self.0.prompting.lock().unwrap_or_else(|p| p.into_inner()) = false;
    }
}

pub(crate) async fn prompt(
    agent: &Arc<Agent>,
    req: PromptRequest,
) -> Result<PromptResponse, RpcError> {
    let session = agent.session(&req.session_id)?;
    let input = UserInput {
        trace_parent: req.traceparent(),
        ..prompt_input(&req.prompt)?
    };
    {
        let mut prompting = session.prompting.lock().unwrap_or_else(|p| p.into_inner());
        if *prompting {
            return Err(RpcError::invalid_params(
                "a prompt is already running in this session; cancel it or wait for its answer",
            ));
        }
        *prompting = true;
    }
    let _prompting = Prompting(&session);
    let engine = &agent.engine;
    let id = &session.id;
    let from = engine
        .threads()
        .read(id)
        .await
        .map_err(engine_error)?
        .thread
        .last_seq
        + 1;
    let mut sub = engine
        .feeds()
        .subscribe(id, from)
        .await
        .map_err(engine_error)?;
    let turn = engine
        .turns()
        .send_input(id, input, IfBusy::Reject)
        .await
        .map_err(engine_error)?;
    let mut mapper = UpdateMapper::new(session.cwd.clone(), session.terminals.clone());
    let notify = |update: SessionUpdate| {
        let note = SessionNotification {
            session_id: id.0.clone(),
            update,
        };
        let peer = agent.peer.clone();
        async move { peer.notify("session/update", note).await }
    };
    loop {
        let notification = match sub.next().await {
            None => return Err(RpcError::internal("the engine stopped during the turn")),
            Some(Notification::Lagged { resume_from }) => {
                sub = engine
                    .feeds()
                    .subscribe(id, resume_from)
                    .await
                    .map_err(engine_error)?;
                mapper.resync();
                continue;
            }
            Some(n) => n,
        };
        if let Notification::Event(event) = &notification {
            match &event.payload {
                EventPayload::ItemStarted { item } if item.status == ItemStatus::InProgress => {
                    if let ItemKind::UserInput {
                        request_id,
                        call_id,
                        questions,
                        ..
                    } = &item.kind
                        && agent.caps().elicits_forms()
                    {
                        // Announced first, so the form names a known call.
                        for update in mapper.map(&notification) {
                            notify(update).await;
                        }
                        tokio::spawn(elicit::ask(
                            agent.clone(),
                            session.clone(),
                            request_id.clone(),
                            call_id.clone(),
                            questions.clone(),
                        ));
                        continue;
                    }
                    if let ItemKind::Approval {
                        approval_id,
                        request,
                        ..
                    } = &item.kind
                    {
                        let (announce, call) = mapper.asked(request);
                        if let Some(update) = announce {
                            notify(update).await;
                        }
                        tokio::spawn(permission::ask(
                            agent.clone(),
                            session.clone(),
                            approval_id.clone(),
                            request.clone(),
                            call,
                        ));
                    }
                }
                EventPayload::TurnCompleted {
                    turn_id,
                    status,
                    error,
                    failure,
                    usage: tokens,
                    ..
                } if *turn_id == turn => {
                    usage(agent, &session).await;
                    return stop_reason(*status, *failure, error.as_deref()).map(|mut r| {
                        r.usage = Some(PromptUsage::from(tokens));
                        r
                    });
                }
                _ => {}
            }
        }
        for update in mapper.map(&notification) {
            notify(update).await;
        }
    }
}

/// Sends how full the context is and what the session cost.
async fn usage(agent: &Agent, session: &Session) {
    let engine = &agent.engine;
    let Ok(view) = engine.threads().read(&session.id).await else {
        return;
    };
    let context = engine.turns().context_usage_of(&view);
    let update = SessionUpdate::UsageUpdate {
        used: context.used,
        size: context.limit,
        cost: (view.thread.cost_usd > 0.0).then(|| Cost {
            amount: view.thread.cost_usd,
            currency: "USD".to_owned(),
        }),
    };
    let note = SessionNotification {
        session_id: session.id.0.clone(),
        update,
    };
    agent.peer.notify("session/update", note).await;
}

/// The answer to a prompt whose turn ended so.
fn stop_reason(
    status: TurnStatus,
    failure: Option<TurnFailure>,
    error: Option<&str>,
) -> Result<PromptResponse, RpcError> {
    let stop_reason = match status {
        TurnStatus::Completed | TurnStatus::Running => StopReason::EndTurn,
        TurnStatus::Interrupted => StopReason::Cancelled,
        TurnStatus::Failed if failure == Some(TurnFailure::ModelRefused) => StopReason::Refusal,
        TurnStatus::Failed => {
            let error = error.unwrap_or("the turn failed");
            if error.contains("model rounds") {
                StopReason::MaxTurnRequests
            } else if error.contains("token budget") {
                StopReason::MaxTokens
            } else {
                return Err(RpcError::internal(error));
            }
        }
    };
    Ok(PromptResponse {
        stop_reason,
        usage: None,
    })
}
