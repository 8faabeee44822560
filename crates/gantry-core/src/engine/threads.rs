//! Threads: create, fork, read, list, archive, delete, configure.

use super::*;

/// Threads: create, configure, read, list, fork, archive, delete, pause.
/// Get one from [`Engine::threads`].
#[derive(Clone, Copy)]
pub struct Threads<'e> {
    pub(crate) engine: &'e Engine,
}

impl Threads<'_> {
    /// Creates a thread. It is stored by the time this returns.
    pub async fn create(self, params: CreateThread) -> Result<Thread, EngineError> {
        let (thread, payloads, chosen_id) = self.prepare(params).await?;
        self.engine.spawn_new(payloads, chosen_id).await?;
        // Once the id is known to be this thread's: a taken id never has
        // its thread's key replaced.
        self.engine.keep_thread_key(&thread).await?;
        // A created thread is stored (and its creation published) by the
        // time the caller hears of it, like any event a client sees.
        self.engine.flush().await?;
        self.read_back(&thread.id).await
    }

    /// Creates a thread and sends it its first message, in one step: as
    /// [`Threads::create`] then [`Turns::send_input`](crate::Turns::send_input),
    /// except that the creation is stored with the turn's first events
    /// rather than before the model is asked. A message sent to any thread
    /// is stored that way already, so a new thread's first model request
    /// no longer waits on the disk (`gantry exec` with a new data dir: the
    /// write-ahead log's first sync). Returns the thread as created (follow
    /// its feed from `last_seq + 1` for the turn) and the turn.
    pub async fn create_and_send(
        self,
        params: CreateThread,
        input: UserInput,
    ) -> Result<(Thread, TurnId), EngineError> {
        // A malformed message (empty, a bad image) creates no thread.
        let input = super::turns::checked(input, None)?;
        let (thread, payloads, chosen_id) = self.prepare(params).await?;
        self.engine.spawn_new(payloads, chosen_id).await?;
        self.engine.keep_thread_key(&thread).await?;
        let created = self.read_back(&thread.id).await?;
        let delivered = self
            .engine
            .turns()
            .deliver(&thread.id, input, IfBusy::Reject)
            .await?;
        Ok((created, delivered.turn))
    }

    /// A new thread's log and whether its id is the caller's (so may be
    /// taken); nothing is created yet.
    async fn prepare(
        self,
        params: CreateThread,
    ) -> Result<(Thread, Vec<EventPayload>, bool), EngineError> {
        self.engine
            .shared
            .config
            .check_sandbox(params.policy.sandbox)?;
        let cwd = workspace(&params.cwd)?;
        let agent = match &params.agent {
            Some(id) => Some(self.engine.agents().get(id).await?),
            None => None,
        };
        let model = params
            .model
            .filter(|m| !m.trim().is_empty())
            .or_else(|| agent.as_ref().and_then(|a| a.model.clone()))
            .unwrap_or_else(|| self.engine.providers().default_model());
        let reasoning = params
            .reasoning
            .filter(|r| !r.trim().is_empty())
            .or_else(|| agent.as_ref().and_then(|a| a.reasoning.clone()));
        let instructions = params
            .instructions
            .or_else(|| agent.as_ref().and_then(|a| a.instructions.clone()));
        let chosen_id = params.id.is_some();
        let id = match params.id {
            Some(id) => check_thread_id(id)?,
            None => ThreadId::new(),
        };
        let now = self.engine.shared.clock.now_ms();
        let thread = Thread {
            id,
            name: params.name,
            cwd: cwd.to_string_lossy().into_owned(),
            model,
            reasoning,
            instructions,
            endpoint: params.endpoint,
            temperature: params.temperature,
            max_output_tokens: params.max_output_tokens,
            metadata: params.metadata,
            status: ThreadStatus::Idle,
            archived: false,
            preview: String::new(),
            created_at: now,
            updated_at: now,
            forked_from: None,
            agent_id: params.agent,
            usage: Usage::default(),
            cost_usd: 0.0,
            paused: false,
            policy: params.policy,
            lane_handlers: Vec::new(),
            todos: Vec::new(),
            goal: None,
            last_seq: 0,
        };
        thread
            .settings()
            .validate()
            .map_err(EngineError::InvalidInput)?;
        let mut payloads = vec![EventPayload::ThreadCreated {
            thread: thread.clone(),
        }];
        payloads.extend(context_turn(&thread, &params.context, now));
        Ok((thread, payloads, chosen_id))
    }

    /// The thread as its actor holds it now.
    pub(super) async fn read_back(self, id: &ThreadId) -> Result<Thread, EngineError> {
        self.read(id).await.map(|v| v.thread.clone())
    }

    /// Changes a thread's settings (name, model, instructions, model server,
    /// sampling, metadata): `patch` is applied to the settings as they are
    /// in the thread now (fields it leaves out keep their value), validated,
    /// recorded, and used from the next model request. Returns the thread as
    /// it is now. Refused for an archived thread. A new workspace (`cwd`)
    /// must be an existing directory and is refused while a turn runs
    /// ([`EngineError::Busy`]); the thread's workspace skills follow it.
    pub async fn configure(
        self,
        thread: &ThreadId,
        mut patch: ThreadSettingsPatch,
    ) -> Result<Thread, EngineError> {
        if let Some(cwd) = patch.cwd.take() {
            patch.cwd = Some(
                workspace(std::path::Path::new(&cwd))?
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        self.engine
            .ask(thread, |reply| Command::Configure { patch, reply })
            .await?
    }

    /// Archives a thread (it stays readable, accepts no input, leaves default listings).
    pub async fn archive(self, thread: &ThreadId) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetArchived {
                archived: true,
                reply,
            })
            .await?
    }

    /// Deletes a thread for good: its events (so its turns and items), its
    /// own MCP servers and its memories, from the store and from memory.
    /// Refused while a turn runs ([`EngineError::Busy`]: interrupt it first;
    /// a delete never stops work by itself). The thread's subscribers see
    /// their feed end, and the engine-wide feed says
    /// [`EngineEventKind::ThreadDeleted`]. An unknown thread is
    /// [`EngineError::ThreadNotFound`].
    pub async fn delete(self, thread: &ThreadId) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::Delete { reply })
            .await??;
        self.engine.mcp().remove_thread_servers(thread).await?;
        self.engine.publish(
            Some(thread.clone()),
            EngineEventKind::ThreadDeleted {
                thread_id: thread.clone(),
            },
        );
        Ok(())
    }

    /// Unarchives a thread.
    pub async fn unarchive(self, thread: &ThreadId) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetArchived {
                archived: false,
                reply,
            })
            .await?
    }

    /// The thread with its turns and items.
    pub async fn read(self, thread: &ThreadId) -> Result<Arc<ThreadView>, EngineError> {
        self.engine
            .ask(thread, |reply| Command::Read { reply })
            .await
    }

    /// The thread's whole event log, oldest first, as stored once every
    /// event so far is saved (what exports such as ATIF are made from:
    /// the view has no per-response usage).
    pub async fn events(self, thread: &ThreadId) -> Result<Vec<gantry_types::Event>, EngineError> {
        self.engine.flush().await?;
        let events = self.engine.shared.store.events(thread, 1).await?;
        if events.is_empty() {
            return Err(EngineError::ThreadNotFound(thread.clone()));
        }
        Ok(events)
    }

    /// Lists threads, newest first.
    pub async fn list(self, query: &ThreadQuery) -> Result<ThreadPage, EngineError> {
        // The listing comes from the store: let it catch up first, so a
        // caller sees its own changes.
        self.engine.flush().await?;
        Ok(self.engine.shared.store.list_threads(query).await?)
    }

    /// A new thread with the history of `thread` up to and including
    /// `up_to` (every ended turn when `None`).
    pub async fn fork(
        &self,
        thread: &ThreadId,
        up_to: Option<&TurnId>,
    ) -> Result<Thread, EngineError> {
        self.fork_as(thread, up_to, None).await
    }

    /// [`Threads::fork`] into the thread `id` when given (the id a client
    /// chose, checked as [`CreateThread::id`] is:
    /// [`EngineError::AlreadyExists`] when taken), else a fresh one.
    pub async fn fork_as(
        &self,
        thread: &ThreadId,
        up_to: Option<&TurnId>,
        id: Option<ThreadId>,
    ) -> Result<Thread, EngineError> {
        let chosen_id = id.is_some();
        let id = match id {
            Some(id) => check_thread_id(id)?,
            None => ThreadId::new(),
        };
        let source = self.engine.threads().read(thread).await?;
        let end = match up_to {
            Some(turn) => source
                .turns
                .iter()
                .position(|t| &t.turn.id == turn)
                .ok_or_else(|| EngineError::TurnNotFound {
                    thread: thread.clone(),
                    turn: turn.clone(),
                })?,
            None => match source.turns.iter().rposition(|t| t.turn.status.is_final()) {
                Some(i) => i,
                None => usize::MAX,
            },
        };
        let turns = if end == usize::MAX {
            &[][..]
        } else {
            &source.turns[..=end]
        };
        self.fork_turns(thread, &source, turns, id, chosen_id, None)
            .await
    }

    /// Pauses the thread: no new model call or tool call starts until resumed.
    pub async fn pause(self, thread: &ThreadId) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetPaused {
                paused: true,
                reply,
            })
            .await?
    }

    /// Resumes a paused thread.
    pub async fn resume(self, thread: &ThreadId) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetPaused {
                paused: false,
                reply,
            })
            .await?
    }

    /// How many threads are loaded in memory now (idle ones are evicted
    /// after [`crate::EngineConfig::evict_idle_after`]).
    pub fn loaded(self) -> usize {
        self.engine.shared.cells.len()
    }
}

impl Engine {
    /// Creates the actor of a new thread whose log is `payloads` (queued
    /// for the store, not yet stored). The store is asked whether the id is
    /// taken only when it is the caller's (`chosen_id`): a fresh UUIDv7
    /// cannot be.
    pub(super) async fn spawn_new(
        &self,
        payloads: Vec<EventPayload>,
        chosen_id: bool,
    ) -> Result<(), EngineError> {
        let Some(EventPayload::ThreadCreated { thread }) = payloads.first() else {
            return Err(EngineError::InvalidInput(
                "a thread log starts with thread_created".into(),
            ));
        };
        let id = thread.id.clone();
        let now = self.shared.clock.now_ms();
        let events: Vec<Event> = payloads
            .into_iter()
            .zip(1..)
            .map(|(payload, seq)| {
                let (turn_id, item_id) = payload.subject();
                Event {
                    thread_id: id.clone(),
                    seq,
                    ts: now,
                    turn_id: turn_id.cloned(),
                    item_id: item_id.cloned(),
                    payload,
                    cursor: 0,
                }
            })
            .collect();
        let view = ThreadView::from_events(&events).ok_or_else(|| {
            EngineError::InvalidInput("a thread log starts with thread_created".into())
        })?;
        // The cell's slot is held from the check to the insert: two
        // creations of one id cannot both pass; other threads never wait.
        let cell = self.shared.cells.cell(&id);
        let mut slot = cell.slot.lock().await;
        let taken = slot.as_ref().is_some_and(|h| !h.is_closed())
            || !self.shared.cells.is_current(&id, &cell)
            || (chosen_id && self.stored(&id).await?);
        if taken {
            return Err(EngineError::AlreadyExists {
                what: "thread",
                name: id.0,
            });
        }
        let handle = ThreadActor::spawn(self.shared.clone(), view, events, cell.clone()).await;
        *slot = Some(handle);
        Ok(())
    }

    /// Whether the store holds a thread (after the writer caught up).
    async fn stored(&self, id: &ThreadId) -> Result<bool, EngineError> {
        self.flush().await?;
        Ok(self.shared.store.thread(id).await?.is_some())
    }
}

/// The log of a turn holding the conversation a thread starts with: each
/// agent message its own round, so none merge.
fn context_turn(thread: &Thread, context: &[ContextMessage], now: i64) -> Vec<EventPayload> {
    if context.is_empty() {
        return Vec::new();
    }
    let turn_id = TurnId::new();
    let mut payloads = vec![EventPayload::TurnStarted {
        turn: Turn::started(turn_id.clone(), thread.id.clone(), String::new(), None, now),
    }];
    for (message, round) in context.iter().zip(1..) {
        let (kind, round) = match message.role {
            ContextRole::User => (
                ItemKind::UserMessage {
                    text: message.text.clone(),
                    key: None,
                    images: Vec::new(),
                },
                0,
            ),
            ContextRole::Assistant => (
                ItemKind::AgentMessage {
                    text: message.text.clone(),
                },
                round,
            ),
        };
        payloads.push(EventPayload::ItemCompleted {
            item: Item {
                id: ItemId::new(),
                turn_id: turn_id.clone(),
                round,
                status: ItemStatus::Completed,
                started_at: now,
                completed_at: Some(now),
                kind,
                tool_call: None,
            },
        });
    }
    payloads.push(EventPayload::TurnCompleted {
        turn_id,
        status: TurnStatus::Completed,
        rounds: 0,
        usage: Usage::default(),
        cost_usd: 0.0,
        error: None,
        failure: None,
    });
    payloads
}

/// Longest thread id a client may choose.
const MAX_THREAD_ID_LEN: usize = 128;

/// A client-chosen thread id, if it is one the store and every protocol
/// can carry.
/// Whether a client may choose `id` as a thread's id: 1 to 128 letters,
/// digits, `-`, `_`, `.` or `:`, and not `.` or `..`. Hosts name directories
/// after thread ids, so an id is always one plain path component.
pub fn valid_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id.len() <= MAX_THREAD_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

fn check_thread_id(id: ThreadId) -> Result<ThreadId, EngineError> {
    if valid_thread_id(&id.0) {
        Ok(id)
    } else {
        Err(EngineError::InvalidInput(format!(
            "thread id `{id}`: use 1 to {MAX_THREAD_ID_LEN} letters, digits, `-`, `_`, `.` or `:` (not `.` or `..`)"
        )))
    }
}

/// A workspace as the engine keeps it: canonical, and an existing directory.
fn workspace(dir: &std::path::Path) -> Result<std::path::PathBuf, EngineError> {
    std::fs::canonicalize(dir)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            EngineError::InvalidInput(format!(
                "workspace {} is not an existing directory",
                dir.display()
            ))
        })
}
