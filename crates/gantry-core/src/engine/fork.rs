//! A fork's log: a new thread holding copies of some of another's turns.

use super::*;

impl Threads<'_> {
    /// A new thread `id` holding copies of `turns` of `thread` (`source`,
    /// its view), in workspace `cwd` when given, else the source's.
    pub(super) async fn fork_turns(
        &self,
        thread: &ThreadId,
        source: &ThreadView,
        turns: &[gantry_types::TurnView],
        id: ThreadId,
        chosen_id: bool,
        cwd: Option<String>,
    ) -> Result<Thread, EngineError> {
        if turns.iter().any(|t| t.turn.status == TurnStatus::Running) {
            return Err(EngineError::InvalidInput(
                "cannot fork inside a running turn; fork up to an ended turn".to_owned(),
            ));
        }
        let now = self.engine.shared.clock.now_ms();
        let mut thread_meta = source.thread.clone();
        thread_meta.id = id.clone();
        thread_meta.status = ThreadStatus::Idle;
        thread_meta.archived = false;
        thread_meta.preview = String::new();
        thread_meta.created_at = now;
        thread_meta.updated_at = now;
        thread_meta.usage = Usage::default();
        thread_meta.cost_usd = 0.0;
        thread_meta.last_seq = 0;
        if let Some(cwd) = cwd {
            thread_meta.cwd = cwd;
        }
        thread_meta.forked_from = turns.last().map(|t| ForkOrigin {
            thread_id: thread.clone(),
            turn_id: t.turn.id.clone(),
        });
        let mut payloads = vec![EventPayload::ThreadCreated {
            thread: thread_meta.clone(),
        }];
        // Copies get fresh ids: turn and item ids are globally unique.
        for tv in turns {
            let mut turn = tv.turn.clone();
            turn.id = TurnId::new();
            turn.thread_id = id.clone();
            turn.status = TurnStatus::Running;
            let turn_id = turn.id.clone();
            payloads.push(EventPayload::TurnStarted { turn });
            for item in &tv.items {
                let mut item = item.clone();
                item.id = ItemId::new();
                item.turn_id = turn_id.clone();
                payloads.push(EventPayload::ItemCompleted { item });
            }
            payloads.push(EventPayload::TurnCompleted {
                turn_id,
                status: tv.turn.status,
                rounds: tv.turn.rounds,
                usage: tv.turn.usage,
                cost_usd: tv.turn.cost_usd,
                error: tv.turn.error.clone(),
                failure: tv.turn.failure,
            });
        }
        self.engine.spawn_new(payloads, chosen_id).await?;
        // Once the id is known to be this thread's: a taken id never has
        // its thread's key replaced.
        self.engine.keep_thread_key(&thread_meta).await?;
        self.engine.flush().await?;
        self.read_back(&id).await
    }
}
