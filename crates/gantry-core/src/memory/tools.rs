//! `remember` and `recall`: the model's hands on the thread's memory. They
//! only touch the engine's own store, so the policy always allows them.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use gantry_tools::{Tool, ToolContext, ToolOutput, ToolStatus};
use gantry_types::memory::{MemoryItem, MemoryQuery, MemorySearchResult, MemoryType, NewMemory};
use gantry_types::{AgentId, ItemKind, ThreadId, ToolSpec};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Memories;
use crate::engine::Shared;

const REMEMBER: &str = "remember";
const RECALL: &str = "recall";

/// Results `recall` returns when the model names no limit.
const DEFAULT_RECALL_LIMIT: u32 = 5;

/// The memory tools of a turn in `thread` (under `agent`, if any).
pub(crate) fn tools(
    shared: &Shared,
    thread: &ThreadId,
    agent: Option<&AgentId>,
) -> [Arc<dyn Tool>; 2] {
    let memories = Arc::new(Memories::new(shared, thread.clone(), agent.cloned()));
    [
        Arc::new(RememberTool {
            memories: memories.clone(),
        }),
        Arc::new(RecallTool { memories }),
    ]
}

/// `remember`: stores a memory.
struct RememberTool {
    memories: Arc<Memories>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    content: String,
    #[serde(default, rename = "type")]
    memory_type: Option<MemoryType>,
    #[serde(default)]
    importance: Option<f32>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    shared: bool,
}

#[async_trait]
impl Tool for RememberTool {
    fn spec(&self) -> ToolSpec {
        let mut properties = json!({
            "content": {"type": "string", "description": "What to remember, self-contained: it will be read without today's context."},
            "type": {
                "type": "string",
                "enum": ["semantic", "procedural", "episodic", "working"],
                "description": "semantic: a fact (default); procedural: how to do something; episodic: what happened; working: scratch state of the current task."
            },
            "importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "How much it matters, 0 to 1 (default 0.5)."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Short keywords to find it by."}
        });
        if self.memories.can_share() {
            properties["shared"] = json!({
                "type": "boolean",
                "description": "Share it with every thread of your agent instead of keeping it in this thread (default false)."
            });
        }
        ToolSpec {
            name: REMEMBER.into(),
            description: "Store something worth remembering beyond this conversation: facts about \
                          the user or the project, procedures that worked, outcomes. Recall it \
                          later with `recall`."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": properties,
                "required": ["content"],
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        call_item(REMEMBER, args, None)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let work = async {
            let a: RememberArgs = parse(REMEMBER, &args)?;
            let new = NewMemory {
                content: a.content,
                memory_type: a.memory_type.unwrap_or(MemoryType::Semantic),
                importance: a.importance.unwrap_or(NewMemory::default().importance),
                tags: a.tags,
                shared: a.shared,
                ..NewMemory::default()
            };
            let stored = self
                .memories
                .store(new)
                .await
                .map_err(|e| format!("{REMEMBER}: {e}"))?;
            Ok(format!("Remembered as {}.", describe(&stored)))
        };
        finish(REMEMBER, &args, &ctx, work).await
    }
}

/// `recall`: searches memories.
struct RecallTool {
    memories: Arc<Memories>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    min_importance: Option<f32>,
    #[serde(default)]
    recent_only: bool,
}

#[async_trait]
impl Tool for RecallTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: RECALL.into(),
            description: "Search what you remembered earlier (with `remember`), best match first. \
                          Use it before asking the user something they may have told you already."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for; memories holding more of the rarer words rank first. Omit to list the most important memories."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only memories with all of these tags."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many (default 5)."},
                    "min_importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "Only memories at least this important."},
                    "recent_only": {"type": "boolean", "description": "Only memories from the last 24 hours."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn start_item(&self, args: &Value, _ctx: &ToolContext) -> ItemKind {
        call_item(RECALL, args, None)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> ToolOutput {
        let work = async {
            let a: RecallArgs = parse(RECALL, &args)?;
            let query = MemoryQuery {
                query: a.query,
                tags: a.tags,
                limit: a.limit.unwrap_or(DEFAULT_RECALL_LIMIT),
                recent_only: a.recent_only,
                min_importance: a.min_importance,
            };
            let found = self
                .memories
                .search(query)
                .await
                .map_err(|e| format!("{RECALL}: {e}"))?;
            Ok(listing(&found))
        };
        finish(RECALL, &args, &ctx, work).await
    }
}

/// Parses a tool's arguments; the message names what is wrong.
fn parse<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, String> {
    T::deserialize(args).map_err(|e| {
        format!(
            "invalid arguments for {tool}: {e}; call it again with arguments that match its schema"
        )
    })
}

/// Runs `work` unless the turn is interrupted first, and shapes its result.
async fn finish(
    name: &str,
    args: &Value,
    ctx: &ToolContext,
    work: impl Future<Output = Result<String, String>>,
) -> ToolOutput {
    let result = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => None,
        result = work => Some(result),
    };
    match result {
        Some(Ok(text)) => ToolOutput {
            status: ToolStatus::Ok,
            model_output: text.clone(),
            item: call_item(name, args, Some(Ok(text))),
        },
        Some(Err(message)) => ToolOutput {
            status: ToolStatus::Error,
            model_output: message.clone(),
            item: call_item(name, args, Some(Err(message))),
        },
        None => ToolOutput {
            status: ToolStatus::Interrupted,
            model_output: "interrupted".to_owned(),
            item: call_item(name, args, Some(Err("interrupted".to_owned()))),
        },
    }
}

/// The tool-call item, in progress (`None`) or ended.
fn call_item(name: &str, args: &Value, result: Option<Result<String, String>>) -> ItemKind {
    let (result, error) = match result {
        None => (None, None),
        Some(Ok(text)) => (Some(text), None),
        Some(Err(message)) => (None, Some(message)),
    };
    ItemKind::ToolCall {
        name: name.to_owned(),
        arguments: args.clone(),
        result,
        error,
    }
}

/// `m-1 (semantic, importance 0.8, tags: a, b)`.
fn describe(m: &MemoryItem) -> String {
    let mut s = format!(
        "{} ({}, importance {}",
        m.id,
        m.memory_type.as_str(),
        m.importance
    );
    if !m.tags.is_empty() {
        let _ = write!(s, ", tags: {}", m.tags.join(", "));
    }
    s.push(')');
    s
}

/// What `recall` tells the model: one memory per entry, best first.
fn listing(found: &MemorySearchResult) -> String {
    if found.memories.is_empty() {
        return "No memories match.".to_owned();
    }
    let mut out = format!(
        "{} of {} matching memories, best first:\n",
        found.memories.len(),
        found.total_count
    );
    for m in &found.memories {
        let _ = writeln!(out, "- {}: {}", describe(m), m.content.trim());
    }
    out
}
