//! One runner's batch of updates while it is being applied: what it has
//! written so far (read back by its later updates before anything is
//! committed), and the writes themselves.

use std::collections::HashMap;

use super::Context;
use super::cache::{ThreadState, TurnIds};
use crate::store::{
    AgentRecord, ItemRecord, RequestRecord, SkillRecord, StoreError, ThreadChange, ThreadRecord,
    TurnRecord, Upsert, Write,
};

/// What a batch has written, and is to write.
#[derive(Default)]
pub(super) struct Batch {
    /// The writes, in order.
    pub writes: Vec<Write>,
    /// The threads it touched, as they are after it.
    pub threads: HashMap<String, ThreadState>,
    /// The requests it linked, as they are after it.
    pub requests: HashMap<String, RequestRecord>,
    /// Agents it wrote.
    agents: HashMap<String, AgentRecord>,
    /// Turns it wrote, by thread and id.
    turns: HashMap<(String, String), TurnRecord>,
    /// Items it wrote, by thread and id.
    items: HashMap<(String, String), ItemRecord>,
}

/// Key of a turn or item in its thread.
fn key(thread_id: &str, id: &str) -> (String, String) {
    (thread_id.to_owned(), id.to_owned())
}

impl Context<'_> {
    /// The thread's state: the batch's, else the cache's, else the store's.
    async fn state(&mut self, thread_id: &str) -> Result<&mut ThreadState, StoreError> {
        if !self.batch.threads.contains_key(thread_id) {
            let state = match self.tracker.cache.thread(thread_id) {
                Some(state) => state,
                None => {
                    let store = &self.tracker.store;
                    let last_seq = store.last_seq(thread_id).await?;
                    ThreadState {
                        record: store.thread(thread_id).await?,
                        last_seq,
                        // An empty log: no turn either.
                        turn_ids: if last_seq == 0 {
                            TurnIds::All(Default::default())
                        } else {
                            TurnIds::Unknown
                        },
                        ..ThreadState::default()
                    }
                }
            };
            self.batch.threads.insert(thread_id.to_owned(), state);
        }
        Ok(self.batch.threads.entry(thread_id.to_owned()).or_default())
    }

    /// The thread `id`.
    pub(super) async fn thread(&mut self, id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        Ok(self.state(id).await?.record.clone())
    }

    /// The thread, if it is this runner's.
    pub(super) async fn own_thread(
        &mut self,
        id: &str,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        let runner_id = self.runner_id;
        Ok(self.thread(id).await?.filter(|t| t.runner_id == runner_id))
    }

    /// A turn of a thread.
    pub(super) async fn turn(
        &mut self,
        thread_id: &str,
        id: &str,
    ) -> Result<Option<TurnRecord>, StoreError> {
        if let Some(turn) = self.batch.turns.get(&key(thread_id, id)) {
            return Ok(Some(turn.clone()));
        }
        let state = self.state(thread_id).await?;
        if let Some(turn) = state.turn.as_ref().filter(|t| t.id == id) {
            return Ok(Some(turn.clone()));
        }
        if matches!(state.turn_ids, TurnIds::Unknown) {
            // Read once per thread kept: its later new turns need no read.
            let ids = self
                .tracker
                .store
                .turn_ids(thread_id, TurnIds::MAX + 1)
                .await?;
            self.state(thread_id).await?.turn_ids = TurnIds::read(ids);
        }
        if self.state(thread_id).await?.turn_ids.is_new(id) {
            return Ok(None);
        }
        self.tracker.store.turn(thread_id, id).await
    }

    /// An item of a thread, in the turn `turn_id` if known.
    pub(super) async fn item(
        &mut self,
        thread_id: &str,
        id: &str,
        turn_id: Option<&str>,
    ) -> Result<Option<ItemRecord>, StoreError> {
        if let Some(item) = self.batch.items.get(&key(thread_id, id)) {
            return Ok(Some(item.clone()));
        }
        let state = self.state(thread_id).await?;
        if let Some(item) = state.items.get(id) {
            return Ok(Some(item.clone()));
        }
        // Every item of a turn first recorded here is kept with it.
        let current = state.turn.as_ref().map(|t| t.id.as_str());
        if state.turn_born_here && turn_id.is_some() && turn_id == current {
            return Ok(None);
        }
        self.tracker.store.item(thread_id, id).await
    }

    /// The thread's latest turn, as the batch would leave it.
    pub(super) async fn latest_turn(
        &mut self,
        thread_id: &str,
    ) -> Result<Option<TurnRecord>, StoreError> {
        let state = self.state(thread_id).await?;
        let latest = match state.turn.clone() {
            Some(turn) => Some(turn),
            // Not kept: the store's, in the order turns were first seen.
            None => self.tracker.store.turns(thread_id).await?.pop(),
        };
        Ok(match latest {
            Some(turn) => self.turn(thread_id, &turn.id).await?.or(Some(turn)),
            None => None,
        })
    }

    /// The items of a turn still running, as the batch would leave them,
    /// in the order they were first seen.
    pub(super) async fn running_items(
        &mut self,
        thread_id: &str,
        turn_id: &str,
    ) -> Result<Vec<ItemRecord>, StoreError> {
        let state = self.state(thread_id).await?;
        // Every item of a turn first recorded here is kept with it (what
        // this batch wrote included); else the store has the committed ones.
        let kept = state.turn_born_here && state.turn.as_ref().is_some_and(|t| t.id == turn_id);
        let mut items: HashMap<String, ItemRecord> = if kept {
            state.items.clone()
        } else {
            let stored = self.tracker.store.items(thread_id).await?;
            stored
                .into_iter()
                .filter(|i| i.turn_id.as_deref() == Some(turn_id))
                .map(|i| (i.id.clone(), i))
                .collect()
        };
        for ((thread, id), item) in &self.batch.items {
            if thread == thread_id && item.turn_id.as_deref() == Some(turn_id) {
                items.insert(id.clone(), item.clone());
            }
        }
        let mut running: Vec<ItemRecord> = items
            .into_values()
            .filter(|i| !super::merge::ended(&i.status))
            .collect();
        running.sort_by_key(|i| (i.first_seq, i.created_at));
        Ok(running)
    }

    /// Records a request in the batch (an interrupt, written with the mark
    /// it puts on its turn).
    pub(super) fn put_request(&mut self, request: RequestRecord) {
        self.batch
            .requests
            .insert(request.id.clone(), request.clone());
        self.batch.writes.push(Write::Request(request));
    }

    /// An agent.
    pub(super) async fn agent(&mut self, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        match self.batch.agents.get(id) {
            Some(agent) => Ok(Some(agent.clone())),
            None => self.tracker.store.agent(id).await,
        }
    }

    /// Writes an agent.
    pub(super) fn put_agent(&mut self, agent: AgentRecord) {
        self.batch.agents.insert(agent.id.clone(), agent.clone());
        self.batch.writes.push(Write::Agent(agent));
    }

    /// Writes a skill.
    pub(super) fn put_skill(&mut self, skill: SkillRecord) {
        self.batch.writes.push(Write::Skill(skill));
    }

    /// Fills in the thread and turn of the request the update answers,
    /// where still unknown.
    pub(super) fn link_request(&mut self, thread_id: Option<&str>, turn_id: Option<&str>) {
        let Some(request) = self.request.as_mut() else {
            return;
        };
        let mut changed = false;
        if request.thread_id.is_none() && thread_id.is_some() {
            request.thread_id = thread_id.map(str::to_owned);
            changed = true;
        }
        if request.turn_id.is_none() && turn_id.is_some() {
            request.turn_id = turn_id.map(str::to_owned);
            changed = true;
        }
        if !changed {
            return;
        }
        self.batch
            .requests
            .insert(request.id.clone(), request.clone());
        self.batch.writes.push(Write::Request(request.clone()));
    }

    /// Writes `upsert` with a log entry of `kind` with the thread's next seq.
    pub(super) async fn append(
        &mut self,
        thread_id: &str,
        upsert: Upsert,
        kind: &str,
        data: String,
    ) -> Result<(), StoreError> {
        let now = self.now;
        let state = self.state(thread_id).await?;
        let seq = state.last_seq + 1;
        state.last_seq = seq;
        let upsert = match upsert {
            Upsert::Thread(thread) => {
                state.record = Some(thread.clone());
                Upsert::Thread(thread)
            }
            Upsert::Turn(mut turn) => {
                let new = turn.first_seq == 0;
                if new {
                    turn.first_seq = seq;
                }
                if state.turn.as_ref().is_none_or(|t| t.id != turn.id) {
                    state.items.clear();
                    state.turn_born_here = new;
                }
                state.turn_ids.add(&turn.id);
                state.turn = Some(turn.clone());
                self.batch
                    .turns
                    .insert(key(thread_id, &turn.id), turn.clone());
                Upsert::Turn(turn)
            }
            Upsert::Item(mut item) => {
                if item.first_seq == 0 {
                    item.first_seq = seq;
                }
                let current = state.turn.as_ref().map(|t| t.id.as_str());
                if item.turn_id.is_some() && item.turn_id.as_deref() == current {
                    state.items.insert(item.id.clone(), item.clone());
                }
                self.batch
                    .items
                    .insert(key(thread_id, &item.id), item.clone());
                Upsert::Item(item)
            }
            Upsert::Nothing => Upsert::Nothing,
        };
        self.batch.writes.push(Write::Change {
            seq,
            change: ThreadChange {
                thread_id: thread_id.to_owned(),
                ts: now,
                upsert,
                kind: kind.to_owned(),
                data,
            },
        });
        Ok(())
    }
}
