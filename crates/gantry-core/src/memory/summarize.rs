//! A summary of a thread's memories, written by the thread's model in a
//! request of its own (not a turn: the conversation does not see it) and
//! kept as a memory, as A3S's `SummarizeMemories` does.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use gantry_llm::{Message, ModelEvent, ModelRequest};
use gantry_store::MemorySearch;
use gantry_types::Thread;
use gantry_types::memory::{
    MemoryItem, MemorySummary, MemorySummaryRequest, MemoryType, NewMemory,
};

use super::{MAX_SEARCH_LIMIT, Memories, validate};
use crate::EngineError;
use crate::endpoints::{ClientSpec, client};
use crate::engine::Shared;

/// Memories summarized when the request names no limit (A3S's default).
const DEFAULT_SUMMARY_LIMIT: u32 = 50;

/// The answer when nothing matches (A3S's words).
const NOTHING_TO_SUMMARIZE: &str = "No memories found matching the criteria.";

/// The summary's importance and tag (A3S's).
const SUMMARY_IMPORTANCE: f32 = 0.9;
const SUMMARY_TAG: &str = "summary";

/// Told to the model that writes the summary.
const INSTRUCTIONS: &str = "You summarize the memories of a coding agent. Answer with the \
summary only: concise and actionable, keeping key patterns, important facts and useful \
procedures. Do not call tools.";

pub(super) async fn summarize(
    shared: &Shared,
    thread: &Thread,
    memories: &Memories,
    request: MemorySummaryRequest,
) -> Result<MemorySummary, EngineError> {
    let found = memories.to_summarize(request).await?;
    if found.is_empty() {
        return Ok(MemorySummary {
            summary: NOTHING_TO_SUMMARIZE.to_owned(),
            memory_count: 0,
            stored: None,
        });
    }
    let memory_count = u32::try_from(found.len()).unwrap_or(u32::MAX);
    let model = client(
        shared,
        &ClientSpec {
            model: &thread.model,
            endpoint: thread.endpoint.as_ref(),
            temperature: thread.temperature,
            max_output_tokens: thread.max_output_tokens,
        },
    )
    .map_err(EngineError::Unavailable)?;
    let request = ModelRequest {
        model: thread.model.clone(),
        instructions: Some(INSTRUCTIONS.to_owned()),
        messages: vec![Message::user(prompt(&found))].into(),
        ..ModelRequest::default()
    };
    let summary = collect_text(model.stream(request)).await?;
    if summary.trim().is_empty() {
        return Err(EngineError::Unavailable(
            "the model answered the summary request with no text".to_owned(),
        ));
    }
    let stored = memories
        .store(NewMemory {
            id: None,
            content: summary.clone(),
            timestamp: None,
            importance: SUMMARY_IMPORTANCE,
            memory_type: MemoryType::Semantic,
            tags: vec![SUMMARY_TAG.to_owned()],
            metadata: BTreeMap::from([("source_count".to_owned(), memory_count.to_string())]),
            shared: false,
        })
        .await?;
    Ok(MemorySummary {
        summary,
        memory_count,
        stored: Some(stored),
    })
}

impl Memories {
    /// The memories a summary covers: the tagged ones (all tags), stored
    /// in the last `recent_hours`, the most important and newest first.
    async fn to_summarize(
        &self,
        request: MemorySummaryRequest,
    ) -> Result<Vec<MemoryItem>, EngineError> {
        let limit = match request.limit {
            0 => DEFAULT_SUMMARY_LIMIT,
            n => n.min(MAX_SEARCH_LIMIT),
        };
        let since = request.recent_hours.map(|hours| {
            self.clock
                .now_ms()
                .saturating_sub(i64::from(hours) * 60 * 60 * 1000)
        });
        let search = MemorySearch {
            scopes: self.scopes(true),
            text: None,
            tags: validate::tags(request.tags)?,
            min_importance: None,
            since,
            limit: limit as usize,
        };
        Ok(self.store.search_memories(&search).await?.memories)
    }
}

/// The request: each memory on a line with its type and tags.
fn prompt(memories: &[MemoryItem]) -> String {
    let mut text = format!(
        "Summarize the following {} memories into a concise, actionable summary. \
         Focus on key patterns, important facts, and useful procedures:\n\n",
        memories.len()
    );
    for m in memories {
        text.push_str(&format!(
            "[{}] (tags: {}) {}\n",
            m.memory_type.as_str(),
            m.tags.join(", "),
            m.content
        ));
    }
    text
}

/// The answer's text, to its end.
async fn collect_text(mut stream: gantry_llm::ModelStream) -> Result<String, EngineError> {
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(ModelEvent::TextDelta(t)) => text.push_str(&t),
            Ok(ModelEvent::Finished { .. }) => return Ok(text),
            Ok(_) => {}
            Err(e) => {
                return Err(EngineError::Unavailable(format!(
                    "the summary request failed: {e}"
                )));
            }
        }
    }
    Err(EngineError::Unavailable(
        "the summary request ended without a finish event".to_owned(),
    ))
}
