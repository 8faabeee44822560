//! Items: the units a turn is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    ApprovalDecision, ApprovalRequest, HandlerMode, ImagePart, ItemId, Lane, TodoItem, TurnId,
    UserInputAnswer, UserInputQuestion,
};

/// Where an item is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Started; deltas may follow.
    InProgress,
    /// Finished normally (a command with a non-zero exit code is still completed).
    Completed,
    /// Finished with an error.
    Failed,
    /// Cut short by an interrupt.
    Interrupted,
}

/// The model's tool call that produced an item, kept so the conversation can
/// be rebuilt exactly as the model saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallOrigin {
    /// The provider's id for the call.
    pub call_id: String,
    /// The tool name the model used.
    pub name: String,
    /// The raw arguments string the model sent (possibly invalid JSON).
    pub arguments: String,
    /// What the model was told as the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why the call did not run, when the engine refused it: what clients
    /// answer on, never the wording of `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
    /// A call of the engine's own tool (structured output's
    /// `submit_output`), not one of the agent's: kept so the conversation
    /// rebuilds, never shown as a tool call on a protocol's stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub internal: bool,
}

/// Why the engine refused to run a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Refusal {
    /// The thread's policy denied it.
    PolicyDenied {
        /// Why, as the model was told.
        reason: String,
        /// The permission rules that matched (empty when the approval
        /// policy denied it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<String>,
    },
    /// A human (or the approval's timeout) denied it.
    ApprovalDenied {
        /// The reason given.
        reason: String,
    },
    /// The event log could not be saved first, so it was not run.
    StoreUnavailable {
        /// The store's error.
        reason: String,
    },
}

/// Who resolved an approval or a user-input request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// A client answered it.
    Client,
    /// Its timeout did, by policy.
    Timeout,
    /// An interrupt of the turn did.
    Interrupt,
}

impl ResolvedBy {
    /// Its name as stored: `client`, `timeout` or `interrupt`.
    pub fn name(self) -> &'static str {
        match self {
            ResolvedBy::Client => "client",
            ResolvedBy::Timeout => "timeout",
            ResolvedBy::Interrupt => "interrupt",
        }
    }
}

/// What an item is, with the details of its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemKind {
    /// Input from the user (the turn's input, or a steer).
    UserMessage {
        /// The user's text.
        text: String,
        /// The sender's idempotency key, if it gave one: the same key is
        /// never sent twice.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Images sent with the text (absent from logs written before
        /// images were taken).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImagePart>,
    },
    /// Text the agent says.
    AgentMessage {
        /// The full text (deltas are folded in on completion).
        text: String,
    },
    /// The model's visible reasoning.
    Reasoning {
        /// The reasoning text (a summary, for models that hide the raw text).
        text: String,
        /// Provider signature that must accompany the block when it is sent
        /// back (Anthropic `thinking.signature`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Opaque provider data sent back unchanged (Anthropic
        /// `redacted_thinking.data`, OpenAI Responses `encrypted_content`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opaque: Option<String>,
    },
    /// A shell command run for the agent.
    CommandExecution {
        /// The command line as given to `bash -lc`.
        command: String,
        /// The directory it ran in.
        cwd: String,
        /// OS process id (also the process group id), once spawned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process_id: Option<u32>,
        /// Combined stdout and stderr, capped with a truncation marker.
        output: String,
        /// Exit code; absent if the process was killed by a signal or never ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Wall time, once finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// A file the agent created, edited or removed.
    FileChange {
        /// Path relative to the workspace.
        path: String,
        /// Unified diff of the change.
        diff: String,
    },
    /// Any other tool call.
    ToolCall {
        /// Tool name.
        name: String,
        /// Arguments (the raw string when they were not valid JSON).
        arguments: Value,
        /// The tool's result, on success.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// The error, on failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The conversation was compacted (or cleared): from here on the model
    /// sees the summary and the kept user messages instead of what came before.
    ContextCompaction {
        /// The model's summary of the earlier conversation (empty when cleared).
        summary: String,
        /// The most recent user messages, kept word for word.
        #[serde(default)]
        kept_user_messages: Vec<String>,
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
        /// `auto` (the context was nearly full), `manual`, or `clear`.
        trigger: String,
    },
    /// A tool call waits for a human's approval.
    Approval {
        /// Id to answer with.
        approval_id: String,
        /// What is asked.
        request: ApprovalRequest,
        /// The answer, once given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<ApprovalDecision>,
        /// Who answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resolved_by: Option<ResolvedBy>,
    },
    /// The model asks the user questions (its `request_user_input` tool)
    /// and waits: in progress while pending; completed when answered
    /// (`resolved_by: client`) or when nobody answered in time
    /// (`timeout`); interrupted by an interrupt, or by a restart (no
    /// `resolved_by`).
    UserInput {
        /// Id to answer with.
        request_id: String,
        /// The provider's id for the tool call.
        call_id: String,
        /// The questions, 1 to 3.
        questions: Vec<UserInputQuestion>,
        /// How long it waits for an answer (0: until answered or interrupted).
        timeout_ms: u64,
        /// The answers, once given (a question left out was skipped).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<Vec<UserInputAnswer>>,
        /// Who resolved it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resolved_by: Option<ResolvedBy>,
    },
    /// A tool call handed to a client (an external or hybrid lane).
    ExternalTask {
        /// Id to complete it with.
        task_id: String,
        /// The call's lane.
        lane: Lane,
        /// Gantry tool name.
        tool: String,
        /// `external` (a client runs it) or `hybrid` (the engine runs it too).
        mode: HandlerMode,
        /// The call's arguments.
        payload: Value,
        /// How long it waits for its client.
        timeout_ms: u64,
        /// The result the client (or, for hybrid, the engine) gave.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// The error, if it failed or timed out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Output the model submitted through `submit_output`, valid against the
    /// requested JSON Schema. Only accepted submissions become this item.
    StructuredOutput {
        /// The schema's name, when the caller gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema_name: Option<String>,
        /// The accepted payload (`null` while in progress).
        payload: Value,
    },
    /// The agent replaced its task list (the `todo_write` tool).
    TodoList {
        /// The whole new list.
        todos: Vec<TodoItem>,
    },
    /// Something went wrong in the turn (model error, crash recovery, limits).
    Error {
        /// One-line, human-readable cause.
        message: String,
    },
}

impl ItemKind {
    /// The snake_case name of the kind, as serialized in `type`.
    pub fn name(&self) -> &'static str {
        match self {
            ItemKind::UserMessage { .. } => "user_message",
            ItemKind::AgentMessage { .. } => "agent_message",
            ItemKind::Reasoning { .. } => "reasoning",
            ItemKind::CommandExecution { .. } => "command_execution",
            ItemKind::FileChange { .. } => "file_change",
            ItemKind::ToolCall { .. } => "tool_call",
            ItemKind::ContextCompaction { .. } => "context_compaction",
            ItemKind::Approval { .. } => "approval",
            ItemKind::UserInput { .. } => "user_input",
            ItemKind::TodoList { .. } => "todo_list",
            ItemKind::ExternalTask { .. } => "external_task",
            ItemKind::StructuredOutput { .. } => "structured_output",
            ItemKind::Error { .. } => "error",
        }
    }
}

/// One unit of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// UUIDv7 id.
    pub id: ItemId,
    /// The turn the item belongs to.
    pub turn_id: TurnId,
    /// The model round (1-based) that produced it; 0 for user input.
    #[serde(default)]
    pub round: u32,
    /// In progress until completed.
    pub status: ItemStatus,
    /// Start time, unix milliseconds.
    pub started_at: i64,
    /// End time, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// The kind and its details.
    #[serde(flatten)]
    pub kind: ItemKind,
    /// The tool call behind the item, if a tool produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCallOrigin>,
}

impl Item {
    /// The tool call behind the item as clients see it: none for the
    /// engine's internal tools, whose calls are no tool use of the agent.
    pub fn public_tool_call(&self) -> Option<&ToolCallOrigin> {
        self.tool_call.as_ref().filter(|c| !c.internal)
    }
}
