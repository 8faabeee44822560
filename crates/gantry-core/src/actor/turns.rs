//! The actor's side of turns: messages that start, steer or queue them,
//! what a running turn reports, and its end.

use super::*;
use tracing::Instrument as _;

/// Messages a turn may have on their way to its actor. A turn produces in
/// bursts (a model's tokens, a command's output chunks) while its actor
/// now and then waits to queue an event for the store: this absorbs such a
/// burst so a healthy turn rarely waits, and is all a turn can get ahead of
/// a slow actor: past it the turn waits for room (back-pressure).
pub const TURN_CHANNEL_CAPACITY: usize = 256;

/// The steer capacity as a literal, for the refusal's text.
macro_rules! steer_capacity {
    () => {
        32
    };
}

/// Steering inputs a running turn may have waiting. It takes them between
/// model rounds, so only a client steering far faster than the turn works
/// fills this; the next steer is then refused, never dropped, and the actor
/// never waits on its turn (the turn may be waiting on the actor).
pub const STEER_CAPACITY: usize = steer_capacity!();

const STEER_FULL: &str = concat!(
    "the running turn already has ",
    steer_capacity!(),
    " steering inputs waiting (it takes them between model rounds); try again shortly"
);

impl ThreadActor {
    pub(super) async fn send(
        &mut self,
        input: Input,
        if_busy: IfBusy,
    ) -> Result<Delivered, EngineError> {
        if self.view.thread.archived {
            return Err(EngineError::Archived(self.thread_id().clone()));
        }
        self.check_images(&input)?;
        let fresh = |turn, steered| Delivered {
            turn,
            steered,
            first_time: true,
        };
        let Some(running) = &self.turn else {
            let id = TurnId::new();
            self.start_turn(id.clone(), input, TurnMode::Chat).await;
            return Ok(fresh(id, false));
        };
        match if_busy {
            IfBusy::Reject => Err(EngineError::Busy {
                thread: self.thread_id().clone(),
                turn: running.id.clone(),
            }),
            IfBusy::Steer => self.steer(input).map(|turn| fresh(turn, true)),
            IfBusy::Queue => {
                let input = QueuedInput {
                    turn_id: TurnId::new(),
                    text: input.text,
                    key: input.key,
                    images: input.images,
                    limits: input.limits,
                    unattended: input.unattended,
                    trace_parent: input.trace_parent,
                };
                let id = input.turn_id.clone();
                self.emit(EventPayload::InputQueued { input }).await;
                Ok(fresh(id, false))
            }
        }
    }

    /// The turn a message with `key` already went to, if one did.
    pub(super) fn delivered(&self, key: &str) -> Option<TurnId> {
        if let Some(turn) = &self.turn
            && turn.steered_keys.iter().any(|k| k == key)
        {
            return Some(turn.id.clone());
        }
        if let Some(queued) = self
            .view
            .queued
            .iter()
            .find(|q| q.key.as_deref() == Some(key))
        {
            return Some(queued.turn_id.clone());
        }
        self.view.turns.iter().rev().find_map(|t| {
            t.items
                .iter()
                .any(|i| matches!(&i.kind, ItemKind::UserMessage { key: Some(k), .. } if k == key))
                .then(|| t.turn.id.clone())
        })
    }

    /// Refuses images the thread's model cannot read (see `crate::images`).
    fn check_images(&self, input: &Input) -> Result<(), EngineError> {
        let model = &self.view.thread.model;
        if input.images.is_empty()
            || crate::images::takes_images(self.shared.models.model_info(model).as_ref())
        {
            return Ok(());
        }
        Err(EngineError::InvalidInput(crate::images::refused(model)))
    }

    pub(super) fn steer(&mut self, input: Input) -> Result<TurnId, EngineError> {
        self.check_images(&input)?;
        let thread = self.thread_id().clone();
        let Some(turn) = &mut self.turn else {
            return Err(EngineError::NotSteerable {
                thread,
                reason: "no turn is running; send the message as a new turn",
            });
        };
        if turn.cancel.is_cancelled() {
            return Err(EngineError::NotSteerable {
                thread,
                reason: "the running turn is being interrupted",
            });
        }
        let key = input.key.clone();
        // Never `send().await`: the turn may be waiting for the actor.
        match turn.steer.try_send(input) {
            Ok(()) => {
                turn.steered_keys.extend(key);
                Ok(turn.id.clone())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(EngineError::NotSteerable {
                thread,
                reason: STEER_FULL,
            }),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(EngineError::NotSteerable {
                thread,
                reason: "the running turn is finishing; queue the message instead",
            }),
        }
    }

    /// Compacts the context with the model's help, or clears it, as a turn
    /// of its own (`/compact`, `/clear`) so clients see it like any other.
    pub(super) async fn compact(&mut self, clear: bool) -> Result<TurnId, EngineError> {
        if self.view.thread.archived {
            return Err(EngineError::Archived(self.thread_id().clone()));
        }
        if let Some(running) = &self.turn {
            return Err(EngineError::Busy {
                thread: self.thread_id().clone(),
                turn: running.id.clone(),
            });
        }
        let id = TurnId::new();
        if !clear {
            self.start_turn(id.clone(), "/compact".to_owned().into(), TurnMode::Compact)
                .await;
            return Ok(id);
        }
        let before =
            Counter::for_model(&self.view.thread.model).messages(&turn::history(&self.view), false);
        self.emit(EventPayload::TurnStarted {
            turn: self.new_turn(&id, &"/clear".to_owned().into()),
        })
        .await;
        let cleared = ItemKind::ContextCompaction {
            summary: String::new(),
            kept_user_messages: Vec::new(),
            tokens_before: before,
            tokens_after: 0,
            trigger: "clear".to_owned(),
        };
        self.emit_instant_item(&id, 0, cleared).await;
        self.emit(EventPayload::TurnCompleted {
            turn_id: id.clone(),
            status: TurnStatus::Completed,
            rounds: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
            failure: None,
        })
        .await;
        Ok(id)
    }

    pub(super) fn new_turn(&self, id: &TurnId, input: &Input) -> Turn {
        let mut turn = Turn::started(
            id.clone(),
            self.thread_id().clone(),
            input.text.clone(),
            input.key.clone(),
            self.shared.clock.now_ms(),
        );
        // Recorded, so costs stay by model after the thread switches.
        turn.model = Some(self.view.thread.model.clone());
        turn.trace_parent.clone_from(&input.trace_parent);
        turn
    }

    pub(super) async fn start_turn(&mut self, id: TurnId, input: Input, mode: TurnMode) {
        let turn = self.new_turn(&id, &input);
        // What the turn logs names its thread, turn and trace (the ids its
        // `invoke_agent` span gets), so a collector joins logs to traces.
        // At the error level so that any filter that lets a line of the
        // turn through keeps its span too (the default is `warn`).
        let trace = turn.trace();
        let log_span = tracing::error_span!(
            "turn",
            thread_id = %turn.thread_id.0,
            turn_id = %turn.id.0,
            trace_id = trace.as_ref().map(|t| t.trace_id.as_str()).unwrap_or_default(),
            span_id = trace.as_ref().map(|t| t.span_id.as_str()).unwrap_or_default(),
        );
        let limits = input.limits.clone();
        let unattended = input.unattended;
        self.emit(EventPayload::TurnStarted { turn }).await;
        if mode.has_user_message() {
            self.emit_user_message(&id, input).await;
        }

        let (tx, rx) = mpsc::channel(TURN_CHANNEL_CAPACITY);
        let (steer_tx, steer_rx) = mpsc::channel(STEER_CAPACITY);
        let cancel = CancellationToken::new();
        let thread = &self.view.thread;
        let spec = TurnSpec {
            turn_id: id.clone(),
            thread_id: thread.id.clone(),
            agent_id: thread.agent_id.clone(),
            model: thread.model.clone(),
            instructions: thread.instructions.clone(),
            endpoint: thread.endpoint.clone(),
            temperature: thread.temperature,
            reasoning: thread.reasoning.clone(),
            max_output_tokens: limits.max_output_tokens.or(thread.max_output_tokens),
            allowed_tools: limits.allowed_tools,
            cwd: PathBuf::from(&thread.cwd),
            history: turn::history(&self.view),
            mode,
            unattended,
            live: self.live.subscribe(),
            grants: self.grants.clone(),
            skills: self.skills.clone(),
            trace: trace.filter(|t| t.from_caller || self.shared.config.propagate_own_traces),
        };
        tokio::spawn(
            turn::run(self.shared.clone(), spec, cancel.clone(), steer_rx, tx).instrument(log_span),
        );
        self.turn = Some(RunningTurn {
            id,
            cancel,
            steer: steer_tx,
            steered_keys: Vec::new(),
            rx,
            bus_full: false,
            interrupt_waiters: Vec::new(),
            budget_limited: false,
        });
    }

    pub(super) async fn emit_user_message(&mut self, turn_id: &TurnId, input: Input) {
        let kind = ItemKind::UserMessage {
            text: input.text,
            key: input.key,
            images: input.images,
        };
        self.emit_instant_item(turn_id, 0, kind).await;
    }

    pub(super) async fn on_turn_msg(&mut self, msg: TurnMsg) {
        match msg {
            TurnMsg::Emit(payload) => {
                let mut ends = false;
                // The goal's accounting comes just before the turn's end, so
                // a client that stops at `turn_completed` has seen it.
                if let EventPayload::TurnCompleted { turn_id, usage, .. } = &payload {
                    self.account_goal(turn_id, usage).await;
                    ends = self.turn.as_ref().is_some_and(|t| &t.id == turn_id);
                }
                self.emit(payload).await;
                // `turn_completed` is the task's last word: the turn is over
                // now, not when its task gets round to exiting, so a client
                // acting on that event never finds the thread still busy.
                if ends {
                    self.on_turn_exit().await;
                }
            }
            TurnMsg::Delta {
                turn_id,
                item_id,
                kind,
            } => {
                let full = self.shared.bus.publish_delta(Delta {
                    thread_id: self.view.thread.id.clone(),
                    turn_id,
                    item_id,
                    after_seq: self.view.thread.last_seq,
                    kind,
                });
                if let Some(turn) = &mut self.turn {
                    turn.bus_full = full;
                }
            }
            TurnMsg::Await { id, waiting, reply } => self.pending.register(id, waiting, reply),
            TurnMsg::Expire { id } => self.pending.expire(&id),
            TurnMsg::Flush(done) => self.shared.writer.flush_then(done).await,
            TurnMsg::BudgetLimited => {
                if let Some(turn) = &mut self.turn {
                    turn.budget_limited = true;
                }
            }
        }
    }

    /// The turn ended: it reported `turn_completed`, or its task stopped
    /// (its channel closed) without doing so.
    pub(super) async fn on_turn_exit(&mut self) {
        let Some(turn) = self.turn.take() else {
            return;
        };
        // Nothing can wait on the turn any more.
        self.pending = Pending::default();
        if self.view.running_turn().is_some() {
            // The task died without closing its turn (a bug or a panic):
            // close it here so the thread does not stay "running" forever.
            self.emit(EventPayload::TurnCompleted {
                turn_id: turn.id.clone(),
                status: TurnStatus::Failed,
                rounds: 0,
                usage: Usage::default(),
                cost_usd: 0.0,
                error: Some("the turn's task stopped unexpectedly".to_owned()),
                failure: Some(TurnFailure::Other),
            })
            .await;
        }
        for waiter in turn.interrupt_waiters {
            let _ = waiter.send(Some(turn.id.clone()));
        }
        if !self.view.thread.archived && !self.view.queued.is_empty() {
            let next = self.view.queued[0].clone();
            let input = Input {
                text: next.text,
                key: next.key,
                images: next.images,
                limits: next.limits,
                unattended: next.unattended,
                trace_parent: next.trace_parent,
            };
            self.start_turn(next.turn_id, input, TurnMode::Chat).await;
        }
    }
}
