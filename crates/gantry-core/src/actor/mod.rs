//! Thread actors: one task per live thread owns its state (the fold of its
//! events) and a mailbox. Every event of the thread is appended here, in seq
//! order, so no lock guards thread state.

mod delete;
mod evict;
mod pending;
mod recovery;
mod skills;
mod structured;
mod turns;

pub(crate) use skills::discover_installed;
use skills::discover_skills;

pub use pending::ExternalTaskInfo;
pub(crate) use pending::{Resolution, Waiting};
pub(crate) use structured::StructuredCommand;
pub use turns::{STEER_CAPACITY, TURN_CHANNEL_CAPACITY};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gantry_types::{
    Delta, Event, EventPayload, Item, ItemKind, ItemStatus, LaneHandler, QueuedInput, Thread,
    ThreadId, ThreadPolicy, ThreadSettingsPatch, ThreadView, Turn, TurnFailure, TurnId, TurnStatus,
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
        patch: ThreadSettingsPatch,
        reply: oneshot::Sender<Result<Thread, EngineError>>,
    },
    /// Structured output, plans and the thread goal.
    Structured(StructuredCommand),
    /// Delete the thread (refused while a turn runs); the actor ends.
    Delete {
        reply: oneshot::Sender<Result<(), EngineError>>,
    },
}

/// Handle to a thread actor's mailbox.
pub(crate) type ActorHandle = mpsc::Sender<Command>;

struct RunningTurn {
    id: TurnId,
    cancel: CancellationToken,
    /// Steering inputs to the turn; only ever `try_send`: the actor never
    /// waits on its turn (which may be waiting for room in `rx`).
    steer: mpsc::Sender<Input>,
    /// Keys of steered messages the turn has not recorded yet.
    steered_keys: Vec<String>,
    rx: mpsc::Receiver<TurnMsg>,
    /// The bus holds as many of this turn's deltas as it may (the events
    /// they follow are not stored yet): nothing more is taken from `rx`
    /// until it has room, so the turn itself waits.
    bus_full: bool,
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
        let for_skills = shared.clone();
        let skills = tokio::task::spawn_blocking(move || {
            discover_skills(&cwd, agent_skills.as_deref(), &for_skills.config)
        })
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
            // While the store is behind, a turn's output waits in its
            // channel and then in the turn; commands are still handled, and
            // an interrupted turn is drained whatever the bus holds, so the
            // interrupt gets through (what it still sends is bounded).
            let wait_for_bus = self
                .turn
                .as_ref()
                .is_some_and(|t| t.bus_full && !t.cancel.is_cancelled());
            tokio::select! {
                cmd = mailbox.recv() => match cmd {
                    Some(Command::Delete { reply }) => {
                        if self.delete(&mut mailbox, &cell, reply).await {
                            return;
                        }
                    }
                    Some(cmd) => {
                        self.handle(cmd).await;
                        // An archived thread takes no input: it leaves memory
                        // at once (once what it wrote is stored), and a read
                        // of one does not keep it.
                        if self.view.thread.archived
                            && self.evictable()
                            && self.evict(&mut mailbox, &cell).await
                        {
                            return;
                        }
                    }
                    None => break,
                },
                msg = next_turn_msg(&mut self.turn), if !wait_for_bus => match msg {
                    Some(msg) => self.on_turn_msg(msg).await,
                    None => self.on_turn_exit().await,
                },
                () = self.shared.bus.room_for_deltas(&self.view.thread.id), if wait_for_bus => {
                    if let Some(turn) = &mut self.turn {
                        turn.bus_full = false;
                    }
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
                let _ = reply.send(self.pending.answer(&id, resolution, &self.view));
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
            Command::Configure { patch, reply } => {
                let _ = reply.send(self.configure(patch).await);
            }
            Command::Structured(cmd) => self.handle_structured(cmd).await,
            // `run` takes it: the actor may end with it.
            Command::Delete { reply } => drop(reply),
        }
    }

    async fn set_archived(&mut self, archived: bool) -> Result<(), EngineError> {
        // Typed, so adapters answer "busy" (HTTP 409) without reading words.
        if let (true, Some(turn)) = (archived, &self.turn) {
            return Err(EngineError::Busy {
                thread: self.thread_id().clone(),
                turn: turn.id.clone(),
            });
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

    async fn configure(&mut self, patch: ThreadSettingsPatch) -> Result<Thread, EngineError> {
        let thread = &self.view.thread;
        if thread.archived {
            return Err(EngineError::Archived(thread.id.clone()));
        }
        let mut settings = thread.settings();
        patch.apply_to(&mut settings);
        settings.validate().map_err(EngineError::InvalidInput)?;
        let moved = settings
            .cwd
            .as_ref()
            .filter(|cwd| **cwd != thread.cwd)
            .cloned();
        if let (Some(_), Some(turn)) = (&moved, &self.turn) {
            // A running turn's tools work in the workspace it started in.
            return Err(EngineError::Busy {
                thread: thread.id.clone(),
                turn: turn.id.clone(),
            });
        }
        let key = settings
            .endpoint
            .as_ref()
            .and_then(|e| e.api_key.as_deref());
        let kept = thread.endpoint.as_ref().and_then(|e| e.api_key.as_deref());
        if key != kept {
            // Beside the thread, before the event: no event holds the key.
            // A server without one loses the old key, never gets it.
            self.shared
                .store
                .put_thread_key(&thread.id, key)
                .await
                .map_err(EngineError::from)?;
        }
        if settings != thread.settings() {
            self.emit(EventPayload::ThreadConfigured { settings }).await;
        }
        if let Some(cwd) = moved {
            self.follow_workspace(&cwd);
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

async fn next_turn_msg(turn: &mut Option<RunningTurn>) -> Option<TurnMsg> {
    match turn {
        Some(t) => t.rx.recv().await,
        None => std::future::pending().await,
    }
}
