//! Following a thread as frames from where a client is: the thread's log
//! is read from the start with the frames of what the client has already
//! dropped, so the mapper knows what the client knows (the open response,
//! the items in progress) and the next frame is exactly the one after.

use std::collections::HashMap;

use gantry_core::{Engine, EngineError, Notification, Subscription};
use gantry_types::{ItemId, ThreadId};

use super::{FrameMapper, Framed};

/// Where a client is in a thread's frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumePoint {
    /// It has the frames of every event up to this seq (0: none).
    pub after_seq: u64,
    /// And the first bytes of each of these items' output (items in
    /// progress; parallel ones each with its own offset).
    pub items: Vec<(ItemId, usize)>,
}

impl ResumePoint {
    /// After the frames of every event up to `seq`, inside no item.
    pub fn after(seq: u64) -> Self {
        Self {
            after_seq: seq,
            items: Vec::new(),
        }
    }

    /// Parses what [`ResumePoint::encode`] wrote (an SSE `Last-Event-ID`).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('/');
        let after_seq = parts.next()?.parse().ok()?;
        let mut items = Vec::new();
        while let Some(item) = parts.next() {
            let offset = parts.next()?.parse().ok()?;
            if item.is_empty() {
                return None;
            }
            items.push((ItemId(item.to_owned()), offset));
        }
        Some(Self { after_seq, items })
    }

    /// `SEQ`, then `/ITEM/OFFSET` for each item in progress.
    pub fn encode(&self) -> String {
        let mut text = self.after_seq.to_string();
        for (item, offset) in &self.items {
            text.push_str(&format!("/{}/{offset}", item.0));
        }
        text
    }
}

/// A thread's frames from a resume point on.
pub struct FrameFeed {
    engine: Engine,
    thread: ThreadId,
    sub: Subscription,
    mapper: FrameMapper,
    after_seq: u64,
}

impl FrameFeed {
    /// Follows `thread` from `from`.
    pub async fn open(
        engine: &Engine,
        thread: &ThreadId,
        from: ResumePoint,
    ) -> Result<Self, EngineError> {
        let mcp_tools: HashMap<String, (String, String)> = engine
            .mcp()
            .tools()
            .await
            .into_iter()
            .map(|t| (t.full_name, (t.server, t.tool)))
            .collect();
        let mut mapper = FrameMapper::new(mcp_tools);
        for (item, offset) in from.items {
            mapper.resume_item(item, offset);
        }
        // From the start: the frames before the point rebuild what the
        // client knows, and are dropped.
        let sub = engine.feeds().subscribe(thread, 1).await?;
        Ok(Self {
            engine: engine.clone(),
            thread: thread.clone(),
            sub,
            mapper,
            after_seq: from.after_seq,
        })
    }

    /// The next frames (possibly none for a notification); `Ok(None)` once
    /// the engine shut down.
    pub async fn next(&mut self) -> Result<Option<Vec<Framed>>, EngineError> {
        let notification = loop {
            match self.sub.next().await {
                None => return Ok(None),
                // Behind the bus: the store has the events missed, and the
                // new subscription starts each item in progress with its
                // text so far, of which the client has some already.
                Some(Notification::Lagged { resume_from }) => {
                    self.sub = self
                        .engine
                        .feeds()
                        .subscribe(&self.thread, resume_from)
                        .await?;
                    self.mapper.resync_open_items();
                }
                Some(notification) => break notification,
            }
        };
        let frames = self.mapper.map(&notification);
        match &notification {
            Notification::Event(event) if event.seq <= self.after_seq => Ok(Some(Vec::new())),
            _ => Ok(Some(frames)),
        }
    }
}
