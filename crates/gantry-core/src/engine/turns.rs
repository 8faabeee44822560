//! Turns: messages, steering, queueing, interrupts, waiting, the context.

use gantry_types::ImagePart;

use super::*;

/// Turns: send messages, steer, queue, interrupt, wait, compact.
/// Get one from [`Engine::turns`].
#[derive(Clone, Copy)]
pub struct Turns<'e> {
    pub(crate) engine: &'e Engine,
}

impl Turns<'_> {
    /// Sends a user message: starts a turn if the thread is idle, else does
    /// what `if_busy` says. Returns the turn the message went to once the
    /// message is stored (the model request may start before): whatever a
    /// client is told was accepted survives a crash.
    pub async fn send(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
        if_busy: IfBusy,
    ) -> Result<TurnId, EngineError> {
        self.send_input(thread, UserInput::from(text.into()), if_busy)
            .await
    }

    /// Sends a user message with images, like [`Turns::send`](crate::Turns::send).
    /// Refused (`InvalidInput`, saying why) when an image is malformed or
    /// too large, or when the catalog says the thread's model reads no
    /// images.
    pub async fn send_input(
        &self,
        thread: &ThreadId,
        input: UserInput,
        if_busy: IfBusy,
    ) -> Result<TurnId, EngineError> {
        let input = checked(input, None)?;
        let delivered = self.deliver(thread, input, if_busy).await?;
        self.engine.flush().await?;
        Ok(delivered.turn)
    }

    /// Sends a message whose turn nobody can answer questions in (a
    /// scheduled job's prompt, a headless `gantry exec`), like
    /// [`Turns::send_input`](crate::Turns::send_input): the model is not
    /// offered `request_user_input` in its turn, even when the message
    /// waits in the queue first, whatever the thread's policy says.
    pub async fn send_unattended(
        &self,
        thread: &ThreadId,
        input: UserInput,
        if_busy: IfBusy,
    ) -> Result<TurnId, EngineError> {
        let mut input = checked(input, None)?;
        input.unattended = true;
        let delivered = self.deliver(thread, input, if_busy).await?;
        self.engine.flush().await?;
        Ok(delivered.turn)
    }

    /// Sends a message already [`checked`].
    pub(super) async fn deliver(
        &self,
        thread: &ThreadId,
        input: Input,
        if_busy: IfBusy,
    ) -> Result<Delivered, EngineError> {
        self.engine
            .ask(thread, |reply| Command::Send {
                input,
                if_busy,
                reply,
            })
            .await?
    }

    /// Sends a user message at most once per `key` (a client's request id):
    /// the first time like [`Turns::send`](crate::Turns::send); again with a key the
    /// thread has seen, nothing happens and the turn the first one went to
    /// is returned with `first_time: false`. Keys live in the thread's log,
    /// so this holds across restarts. Returns once the message is stored.
    pub async fn send_once(
        &self,
        thread: &ThreadId,
        key: impl Into<String>,
        text: impl Into<String>,
        if_busy: IfBusy,
    ) -> Result<Delivered, EngineError> {
        let key = non_empty(key.into())?;
        let input = checked(UserInput::from(text.into()), Some(key))?;
        let delivered = self.deliver(thread, input, if_busy).await?;
        self.engine.flush().await?;
        Ok(delivered)
    }

    /// Injects a message into the running turn; the model sees it before its
    /// next request. Refused (`NotSteerable`, saying why) when no turn runs,
    /// the turn is finishing, or [`crate::STEER_CAPACITY`] steers already
    /// wait for it to take them (try again shortly).
    pub async fn steer(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
    ) -> Result<TurnId, EngineError> {
        self.steer_input(thread, UserInput::from(text.into())).await
    }

    /// Steers with a message that may carry images, like
    /// [`Turns::steer`](crate::Turns::steer), checked like
    /// [`Turns::send_input`](crate::Turns::send_input).
    pub async fn steer_input(
        &self,
        thread: &ThreadId,
        input: UserInput,
    ) -> Result<TurnId, EngineError> {
        let input = checked(input, None)?;
        self.engine
            .ask(thread, |reply| Command::Steer { input, reply })
            .await?
    }

    /// Runs the message after the current turn (at once if idle).
    pub async fn queue(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
    ) -> Result<TurnId, EngineError> {
        self.engine.turns().send(thread, text, IfBusy::Queue).await
    }

    /// Interrupts the running turn: cancels the model stream, kills the running
    /// tools' process groups, and returns once the turn has ended as
    /// interrupted. `None` if no turn was running.
    pub async fn interrupt(self, thread: &ThreadId) -> Result<Option<TurnId>, EngineError> {
        self.engine
            .ask(thread, |reply| Command::Interrupt { reply })
            .await
    }

    /// Waits until `turn` (running, queued or ended) has ended; the turn as
    /// it ended. It follows the thread across lags.
    pub async fn wait(self, thread: &ThreadId, turn: &TurnId) -> Result<Turn, EngineError> {
        let view = self.engine.threads().read(thread).await?;
        let known = view.queued.iter().any(|q| &q.turn_id == turn);
        match ended_turn(&view, turn) {
            Some(Ok(ended)) => return Ok(ended),
            None if !known => {
                return Err(EngineError::TurnNotFound {
                    thread: thread.clone(),
                    turn: turn.clone(),
                });
            }
            _ => {}
        }
        // From the seq after the view just read: nothing in between is missed.
        let mut feed = self
            .engine
            .feeds()
            .follow(thread, view.thread.last_seq + 1)
            .await?;
        loop {
            match feed.next().await? {
                Some(Notification::Event(event)) => {
                    if matches!(&event.payload,
                        EventPayload::TurnCompleted { turn_id, .. } if turn_id == turn)
                    {
                        let view = self.engine.threads().read(thread).await?;
                        if let Some(Ok(ended)) = ended_turn(&view, turn) {
                            return Ok(ended);
                        }
                    }
                }
                Some(_) => {}
                None => return Err(EngineError::ShuttingDown),
            }
        }
    }

    /// Compacts the thread's context now: the model summarises the
    /// conversation, as a turn of its own (`/compact`). Refused while a turn runs.
    pub async fn compact(self, thread: &ThreadId) -> Result<TurnId, EngineError> {
        self.engine
            .ask(thread, |reply| Command::Compact {
                clear: false,
                reply,
            })
            .await?
    }

    /// Clears the thread's context: the model sees nothing before this point
    /// (the log keeps everything). A turn of its own (`/clear`).
    pub async fn clear_context(self, thread: &ThreadId) -> Result<TurnId, EngineError> {
        self.engine
            .ask(thread, |reply| Command::Compact { clear: true, reply })
            .await?
    }

    /// How full the thread's context would be on its next request.
    pub async fn context_usage(self, thread: &ThreadId) -> Result<ContextUsage, EngineError> {
        let view = self.engine.threads().read(thread).await?;
        Ok(self.engine.turns().context_usage_of(&view))
    }

    /// How full the context of the thread `view` shows would be on its next
    /// request (for a caller that has read the thread already).
    pub fn context_usage_of(self, view: &ThreadView) -> ContextUsage {
        let model = &view.thread.model;
        let counter = Counter::for_model(model);
        let used = counter.request(
            view.thread.instructions.as_deref(),
            &turn::history(view),
            &self.engine.shared.tools.specs(),
            true,
        );
        let limit = self
            .engine
            .shared
            .models
            .model_info(model)
            .map_or(0, |i| i.limit.context);
        ContextUsage::new(used, limit)
    }
}

/// `turn` in `view`: `Ok` once it ended, `Err` while it runs.
fn ended_turn(view: &ThreadView, turn: &TurnId) -> Option<Result<Turn, ()>> {
    let tv = view.turns.iter().rev().find(|t| &t.turn.id == turn)?;
    Some(if tv.turn.status.is_final() {
        Ok(tv.turn.clone())
    } else {
        Err(())
    })
}

/// A client's message as the actor takes it: text or images, every image
/// well-formed and within the limits.
pub(super) fn checked(input: UserInput, key: Option<String>) -> Result<Input, EngineError> {
    let UserInput {
        text,
        images,
        limits,
        trace_parent,
    } = input;
    let text = if images.is_empty() {
        non_empty(text)?
    } else {
        ImagePart::check_all(&images).map_err(EngineError::InvalidInput)?;
        text
    };
    Ok(Input {
        text,
        key,
        images,
        limits,
        unattended: false,
        trace_parent,
    })
}

fn non_empty(text: String) -> Result<String, EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::InvalidInput("the message is empty".to_owned()));
    }
    Ok(text)
}
