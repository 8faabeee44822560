//! Thread actors: one task per live thread owns its state (the fold of its
//! events) and a mailbox. Every event of the thread is appended here, in seq
//! order, so no lock guards thread state.

mod pending;
mod recovery;
mod structured;

pub use pending::ExternalTaskInfo;
pub(crate) use pending::{Resolution, Waiting};
pub(crate) use structured::StructuredCommand;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gantry_types::{
    Delta, Event, EventPayload, Item, ItemKind, ItemStatus, LaneHandler, QueuedInput, Thread,
    ThreadId, ThreadPolicy, ThreadSettings, ThreadView, Turn, TurnFailure, TurnId, TurnStatus,
    Usage,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use self::pending::Pending;
use crate::EngineError;
use crate::agents_api::agent_skills_dir;
use crate::cells::Cell;
use crate::context::Counter;
use crate::engine::{Delivered, IfBusy, Input, Shared};
use crate::live::{Grants, Live};
use crate::turn::{self, TurnMode, TurnMsg, TurnSpec};
use gantry_tools::skills::{SharedSkillSet, SkillSet, SkillSource};

/// Mailbox size; senders wait when it is full.
const MAILBOX: usize = 64;

/// What a thread actor can be asked to do.
pub(crate) enum Command {
    /// Start a turn with a user message, or handle it per `if_busy`.
    Send {
        input: Input,
        if_busy: IfBusy,
        reply: oneshot::Sender<Result<Delivered, EngineError>>,
    },
    /// Inject a message into the running turn.
    Steer {
        input: Input,
        reply: oneshot::Sender<Result<TurnId, EngineError>>,
    },
    /// End the running turn; replies once it has ended.
    Interrupt {
        reply: oneshot::Sender<Option<TurnId>>,
    },
    /// Archive or unarchive.
    SetArchived {
        archived: bool,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// The thread's state, as a shared snapshot.
    Read {
        reply: oneshot::Sender<Arc<ThreadView>>,
    },
    /// Answer a pending approval or external task.
    Answer {
        id: String,
        resolution: Resolution,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// External tasks waiting for a client.
    ListTasks {
        reply: oneshot::Sender<Vec<ExternalTaskInfo>>,
    },
    /// Replace the thread's policy.
    SetPolicy {
        policy: ThreadPolicy,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// Pause or resume the thread.
    SetPaused {
        paused: bool,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// The thread's skills (shared with its turns).
    Skills {
        reply: oneshot::Sender<SharedSkillSet>,
    },
    /// Replace the task list.
    SetTodos {
        todos: Vec<gantry_types::TodoItem>,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// Set a lane's handler.
    SetLaneHandler {
        handler: LaneHandler,
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
    /// Compact (`clear: false`) or clear the context, as a turn of its own.
    Compact {
        clear: bool,
        reply: oneshot::Sender<Result<TurnId, EngineError>>,
    },
    /// Change the thread's settings.
    Configure {
        change: Box<dyn FnOnce(&mut ThreadSettings) + Send>,
        reply: oneshot::Sender<Result<Thread, EngineError>>,
    },
    /// Structured output, plans and the thread goal.
    Structured(StructuredCommand),
}

/// Handle to a thread actor's mailbox.
pub(crate) type ActorHandle = mpsc::Sender<Command>;

struct RunningTurn {
    id: TurnId,
    cancel: CancellationToken,
    steer: mpsc::UnboundedSender<Input>,
    /// Keys of steered messages the turn has not recorded yet.
    steered_keys: Vec<String>,
    rx: mpsc::UnboundedReceiver<TurnMsg>,
    interrupt_waiters: Vec<oneshot::Sender<Option<TurnId>>>,
    /// The turn said it stopped for the goal's token budget.
    budget_limited: bool,
}

pub(crate) struct ThreadActor {
    shared: Arc<Shared>,
    /// Shared with readers: a read is a reference count, and the next
    /// event copies the view only while a reader still holds it.
    view: Arc<ThreadView>,
    turn: Option<RunningTurn>,
    live: watch::Sender<Live>,
    grants: Grants,
    pending: Pending,
    skills: SharedSkillSet,
}

impl ThreadActor {
    /// Starts an actor for a thread whose state is `view`. `fresh` events (a
    /// new thread's first events, already folded into `view`) are persisted
    /// and published before the actor takes commands.
    pub(crate) async fn spawn(
        shared: Arc<Shared>,
        view: ThreadView,
        fresh: Vec<Event>,
        cell: Arc<Cell>,
    ) -> ActorHandle {
        let (tx, rx) = mpsc::channel(MAILBOX);
        let live = watch::Sender::new(Live::of(&view.thread));
        let agent_skills = view
            .thread
            .agent_id
            .as_ref()
            .and_then(|a| agent_skills_dir(&shared.config, a));
        // Reading skill folders blocks (a slow disk, a FIFO named SKILL.md):
        // off the runtime's threads, so only this thread's load waits.
        let cwd = view.thread.cwd.clone();
        let skills =
            tokio::task::spawn_blocking(move || discover_skills(&cwd, agent_skills.as_deref()))
                .await
                .unwrap_or_else(|_| SkillSet::shared(Vec::new()));
        let mut actor = ThreadActor {
            shared,
            view: Arc::new(view),
            turn: None,
            live,
            grants: Grants::default(),
            pending: Pending::default(),
            skills,
        };
        if fresh.is_empty() {
            actor
                .shared
                .bus
                .loaded(&actor.view.thread.id, actor.view.thread.last_seq);
        }
        for event in fresh {
            actor.persist(event).await;
        }
        if actor.view.running_turn().is_some() {
            actor.recover_crashed_turn().await;
        }
        tokio::spawn(actor.run(rx, cell));
        tx
    }

    fn thread_id(&self) -> &ThreadId {
        &self.view.thread.id
    }

    async fn run(mut self, mut mailbox: mpsc::Receiver<Command>, cell: Arc<Cell>) {
        let idle_time = self.shared.config.evict_idle_after;
        let idle = tokio::time::sleep(idle_time.unwrap_or(Duration::MAX));
        tokio::pin!(idle);
        loop {
            tokio::select! {
                cmd = mailbox.recv() => match cmd {
                    Some(cmd) => self.handle(cmd).await,
                    None => break,
                },
                msg = next_turn_msg(&mut self.turn) => match msg {
                    Some(msg) => self.on_turn_msg(msg).await,
                    None => self.on_turn_exit().await,
                },
                () = &mut idle, if idle_time.is_some() => {
                    if self.evictable() && self.evict(&mut mailbox, &cell).await {
                        return;
                    }
                }
            }
            if let Some(after) = idle_time {
                idle.as_mut().reset(tokio::time::Instant::now() + after);
            }
        }
        // The engine dropped us (shutdown): stop the running turn's work.
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
    }

    /// Nothing lives only in this actor's memory: no turn, no pending
    /// approval or task, no "approve for session" grant, no loaded skill.
    fn evictable(&self) -> bool {
        self.turn.is_none()
            && self.pending.is_empty()
            && self.grants.lock().is_ok_and(|g| g.is_empty())
            && crate::turn::read_skills(&self.skills).loaded().is_empty()
            && !crate::turn::read_skills(&self.skills)
                .available()
                .iter()
                .any(|s| s.source == SkillSource::Inline)
    }

    /// Leaves memory once everything this actor wrote is stored; the next
    /// use of the thread loads it again from the log. Commands that were
    /// already on their way go to that next actor. False if the store
    /// could not confirm (the actor stays).
    async fn evict(&mut self, mailbox: &mut mpsc::Receiver<Command>, cell: &Arc<Cell>) -> bool {
        if self.shared.writer.flush().await.is_err() {
            return false;
        }
        let id = self.view.thread.id.clone();
        let mut slot = cell.slot.lock().await;
        // Nobody can hand out this actor any more; senders holding it get
        // their command back and load the next one.
        mailbox.close();
        let mut waiting = Vec::new();
        while let Ok(cmd) = mailbox.try_recv() {
            waiting.push(cmd);
        }
        *slot = None;
        // Before the cell goes: the thread's next actor, which loads under a
        // new cell, must find its bus channel already reset.
        self.shared.bus.evict(&id);
        self.shared.cells.forget(&id, cell);
        drop(slot);
        if !waiting.is_empty() {
            tokio::spawn(forward(self.shared.clone(), id, waiting));
        }
        true
    }

    async fn handle(&mut self, cmd: Command) {
        match cmd {
            Command::Send {
                input,
                if_busy,
                reply,
            } => {
                let result = match input.key.as_deref().and_then(|k| self.delivered(k)) {
                    Some(turn) => Ok(Delivered {
                        turn,
                        steered: false,
                        first_time: false,
                    }),
                    None => self.send(input, if_busy).await,
                };
                let _ = reply.send(result);
            }
            Command::Steer { input, reply } => {
                let _ = reply.send(self.steer(input));
            }
            Command::Interrupt { reply } => match &mut self.turn {
                // A turn whose end is already recorded (clients may have
                // seen it) only has its task's exit left: nothing runs.
                Some(turn)
                    if self
                        .view
                        .running_turn()
                        .is_some_and(|t| t.turn.id == turn.id) =>
                {
                    turn.cancel.cancel();
                    self.pending.abort_all();
                    turn.interrupt_waiters.push(reply);
                }
                _ => {
                    let _ = reply.send(None);
                }
            },
            Command::SetArchived { archived, reply } => {
                let _ = reply.send(self.set_archived(archived).await);
            }
            Command::Read { reply } => {
                let _ = reply.send(Arc::clone(&self.view));
            }
            Command::Answer {
                id,
                resolution,
                reply,
            } => {
                let _ = reply.send(self.pending.answer(&id, resolution));
            }
            Command::ListTasks { reply } => {
                let _ = reply.send(self.pending.tasks());
            }
            Command::SetPolicy { policy, reply } => {
                if self.view.thread.policy != policy {
                    self.emit(EventPayload::PolicyChanged { policy }).await;
                }
                let _ = reply.send(Ok(()));
            }
            Command::SetPaused { paused, reply } => {
                if self.view.thread.paused != paused {
                    let payload = if paused {
                        EventPayload::ThreadPaused
                    } else {
                        EventPayload::ThreadResumed
                    };
                    self.emit(payload).await;
                }
                let _ = reply.send(Ok(()));
            }
            Command::Skills { reply } => {
                let _ = reply.send(self.skills.clone());
            }
            Command::SetTodos { todos, reply } => {
                let result =
                    gantry_types::validate_todos(&todos).map_err(EngineError::InvalidInput);
                if result.is_ok() && self.view.thread.todos != todos {
                    self.emit(EventPayload::TodosSet { todos }).await;
                }
                let _ = reply.send(result);
            }
            Command::SetLaneHandler { handler, reply } => {
                if !self.view.thread.lane_handlers.contains(&handler) {
                    self.emit(EventPayload::LaneHandlerSet { handler }).await;
                }
                let _ = reply.send(Ok(()));
            }
            Command::Compact { clear, reply } => {
                let _ = reply.send(self.compact(clear).await);
            }
            Command::Configure { change, reply } => {
                let _ = reply.send(self.configure(change).await);
            }
            Command::Structured(cmd) => self.handle_structured(cmd).await,
        }
    }

    async fn send(&mut self, input: Input, if_busy: IfBusy) -> Result<Delivered, EngineError> {
        if self.view.thread.archived {
            return Err(EngineError::Archived(self.thread_id().clone()));
        }
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
                };
                let id = input.turn_id.clone();
                self.emit(EventPayload::InputQueued { input }).await;
                Ok(fresh(id, false))
            }
        }
    }

    /// The turn a message with `key` already went to, if one did.
    fn delivered(&self, key: &str) -> Option<TurnId> {
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

    fn steer(&mut self, input: Input) -> Result<TurnId, EngineError> {
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
        match turn.steer.send(input) {
            Ok(()) => {
                turn.steered_keys.extend(key);
                Ok(turn.id.clone())
            }
            Err(_) => Err(EngineError::NotSteerable {
                thread,
                reason: "the running turn is finishing; queue the message instead",
            }),
        }
    }

    async fn set_archived(&mut self, archived: bool) -> Result<(), EngineError> {
        if archived && self.turn.is_some() {
            return Err(EngineError::InvalidInput(format!(
                "thread {} is running a turn; interrupt it before archiving",
                self.thread_id()
            )));
        }
        if self.view.thread.archived != archived {
            let payload = if archived {
                EventPayload::ThreadArchived
            } else {
                EventPayload::ThreadUnarchived
            };
            self.emit(payload).await;
        }
        Ok(())
    }

    /// Compacts the context with the model's help, or clears it, as a turn
    /// of its own (`/compact`, `/clear`) so clients see it like any other.
    async fn compact(&mut self, clear: bool) -> Result<TurnId, EngineError> {
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

    fn new_turn(&self, id: &TurnId, input: &Input) -> Turn {
        Turn::started(
            id.clone(),
            self.thread_id().clone(),
            input.text.clone(),
            input.key.clone(),
            self.shared.clock.now_ms(),
        )
    }

    async fn start_turn(&mut self, id: TurnId, input: Input, mode: TurnMode) {
        let turn = self.new_turn(&id, &input);
        self.emit(EventPayload::TurnStarted { turn }).await;
        if mode.has_user_message() {
            self.emit_user_message(&id, input).await;
        }

        let (tx, rx) = mpsc::unbounded_channel();
        let (steer_tx, steer_rx) = mpsc::unbounded_channel();
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
            max_output_tokens: thread.max_output_tokens,
            cwd: PathBuf::from(&thread.cwd),
            history: turn::history(&self.view),
            mode,
            live: self.live.subscribe(),
            grants: self.grants.clone(),
            skills: self.skills.clone(),
        };
        tokio::spawn(turn::run(
            self.shared.clone(),
            spec,
            cancel.clone(),
            steer_rx,
            tx,
        ));
        self.turn = Some(RunningTurn {
            id,
            cancel,
            steer: steer_tx,
            steered_keys: Vec::new(),
            rx,
            interrupt_waiters: Vec::new(),
            budget_limited: false,
        });
    }

    async fn emit_user_message(&mut self, turn_id: &TurnId, input: Input) {
        let kind = ItemKind::UserMessage {
            text: input.text,
            key: input.key,
        };
        self.emit_instant_item(turn_id, 0, kind).await;
    }

    /// An item that starts and completes at once (user input, the actor's
    /// own records): both events, so subscribers see every item's start.
    pub(crate) async fn emit_instant_item(&mut self, turn_id: &TurnId, round: u32, kind: ItemKind) {
        let now = self.shared.clock.now_ms();
        let mut item = Item {
            id: Default::default(),
            turn_id: turn_id.clone(),
            round,
            status: ItemStatus::InProgress,
            started_at: now,
            completed_at: None,
            kind,
            tool_call: None,
        };
        self.emit(EventPayload::ItemStarted { item: item.clone() })
            .await;
        item.status = ItemStatus::Completed;
        item.completed_at = Some(now);
        self.emit(EventPayload::ItemCompleted { item }).await;
    }

    async fn on_turn_msg(&mut self, msg: TurnMsg) {
        match msg {
            TurnMsg::Emit(payload) => {
                // The goal's accounting comes just before the turn's end, so
                // a client that stops at `turn_completed` has seen it.
                if let EventPayload::TurnCompleted { turn_id, usage, .. } = &payload {
                    self.account_goal(turn_id, usage).await;
                }
                self.emit(payload).await;
            }
            TurnMsg::Delta {
                turn_id,
                item_id,
                kind,
            } => self.shared.bus.publish_delta(Delta {
                thread_id: self.view.thread.id.clone(),
                turn_id,
                item_id,
                after_seq: self.view.thread.last_seq,
                kind,
            }),
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

    /// The turn task ended (its channel closed).
    async fn on_turn_exit(&mut self) {
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
            };
            self.start_turn(next.turn_id, input, TurnMode::Chat).await;
        }
    }

    async fn configure(
        &mut self,
        change: Box<dyn FnOnce(&mut ThreadSettings) + Send>,
    ) -> Result<Thread, EngineError> {
        let thread = &self.view.thread;
        if thread.archived {
            return Err(EngineError::Archived(thread.id.clone()));
        }
        let mut settings = thread.settings();
        change(&mut settings);
        settings.validate().map_err(EngineError::InvalidInput)?;
        if settings != thread.settings() {
            self.emit(EventPayload::ThreadConfigured { settings }).await;
        }
        Ok(self.view.thread.clone())
    }

    /// Appends a new event with the next seq.
    pub(crate) async fn emit(&mut self, payload: EventPayload) {
        let (turn_id, item_id) = payload.subject();
        let event = Event {
            thread_id: self.view.thread.id.clone(),
            seq: self.view.thread.last_seq + 1,
            ts: self.shared.clock.now_ms(),
            turn_id: turn_id.cloned(),
            item_id: item_id.cloned(),
            payload,
            cursor: 0,
        };
        self.append(event).await;
    }

    async fn append(&mut self, event: Event) {
        Arc::make_mut(&mut self.view).apply(&event);
        if matches!(
            event.payload,
            EventPayload::PolicyChanged { .. }
                | EventPayload::ThreadPaused
                | EventPayload::ThreadResumed
                | EventPayload::LaneHandlerSet { .. }
                | EventPayload::GoalUpdated { .. }
                | EventPayload::GoalCleared
        ) {
            self.live.send_replace(Live::of(&self.view.thread));
        }
        self.persist(event).await;
    }

    /// Queues an event already folded into the view for the store, which
    /// publishes it once stored.
    async fn persist(&mut self, event: Event) {
        self.shared
            .writer
            .write(event, self.view.thread.clone())
            .await;
    }
}

/// The skills of a workspace, the user's config dir and the thread's agent
/// (installed packages, lowest precedence); broken ones are logged, not fatal.
fn discover_skills(cwd: &str, agent_skills: Option<&std::path::Path>) -> SharedSkillSet {
    let config_home = gantry_tools::skills::default_config_home();
    let (skills, errors) =
        gantry_tools::skills::discover(std::path::Path::new(cwd), config_home.as_deref());
    for e in errors {
        tracing::warn!(error = %e, "skipping a skill");
    }
    let set = SkillSet::shared(skills);
    if let Some(dir) = agent_skills {
        let installed = discover_installed(dir);
        set.write()
            .unwrap_or_else(|p| p.into_inner())
            .sync_source(SkillSource::Installed, installed);
    }
    set
}

/// The skills installed in an agent's skills dir; broken ones are logged.
pub(crate) fn discover_installed(dir: &std::path::Path) -> Vec<gantry_tools::skills::Skill> {
    let (skills, errors) = gantry_tools::skills::discover_dir(dir, SkillSource::Installed);
    for e in errors {
        tracing::warn!(error = %e, "skipping an installed skill");
    }
    skills
}

/// Hands commands an evicted actor never handled to the thread's next
/// actor. A named boxed future: the actor's task would otherwise contain
/// itself (load, spawn, run, evict, load).
fn forward(
    shared: Arc<Shared>,
    id: ThreadId,
    waiting: Vec<Command>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let engine = crate::Engine { shared };
        for cmd in waiting {
            if let Ok(next) = engine.actor(&id).await {
                let _ = next.send(cmd).await;
            }
        }
    })
}

async fn next_turn_msg(turn: &mut Option<RunningTurn>) -> Option<TurnMsg> {
    match turn {
        Some(t) => t.rx.recv().await,
        None => std::future::pending().await,
    }
}
