//! The `item` of `item.started` / `item.completed` lines: its kinds, their
//! fields, and the mapping from the stored item.

use gantry_core::projection;
use gantry_types as stored;
use serde::Serialize;
use serde_json::Value;

/// One unit of the turn: `id`, its `type` with that kind's fields, `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Item {
    /// The item's id; its `item.started`, deltas and `item.completed` share it.
    pub id: String,
    /// The kind (serialized as `type`) and its fields.
    #[serde(flatten)]
    pub details: ItemDetails,
    /// Where the item is.
    pub status: ItemStatus,
}

/// Where an item is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ItemStatus {
    /// Started, not ended (every `item.started`).
    InProgress,
    /// Ended normally (a command with a non-zero exit code included).
    Completed,
    /// Ended with an error (`error` says which, where the kind has one).
    Failed,
    /// Cut short by an interrupt.
    Interrupted,
}

impl From<stored::ItemStatus> for ItemStatus {
    fn from(s: stored::ItemStatus) -> Self {
        match s {
            stored::ItemStatus::InProgress => ItemStatus::InProgress,
            stored::ItemStatus::Completed => ItemStatus::Completed,
            stored::ItemStatus::Failed => ItemStatus::Failed,
            stored::ItemStatus::Interrupted => ItemStatus::Interrupted,
        }
    }
}

/// What an item is, with the fields of its kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ItemDetails {
    /// The user's input (the prompt).
    UserMessage {
        /// What the user said.
        text: String,
    },
    /// Text the agent says; the last one of a completed turn is its final
    /// answer.
    AgentMessage {
        /// The whole text (empty in `item.started`; `item.delta`s stream it).
        text: String,
    },
    /// The model's visible reasoning (a summary, for models that hide it).
    Reasoning {
        /// The whole text (empty in `item.started`; `item.delta`s stream it).
        text: String,
    },
    /// A shell command the agent ran.
    CommandExecution {
        /// The command line, as given to `bash -lc`.
        command: String,
        /// The directory it ran in.
        cwd: String,
        /// Its stdout and stderr together, capped with a truncation marker
        /// (empty in `item.started`; `command.output` streams it).
        aggregated_output: String,
        /// Its exit code; `null` while it runs, or when it was killed by a
        /// signal or never ran.
        exit_code: Option<i32>,
        /// Wall time; `null` until it ended.
        duration_ms: Option<u64>,
        /// Why it did not run or failed (status `failed`); else `null`.
        error: Option<String>,
    },
    /// A file the agent created or edited.
    FileChange {
        /// The path, relative to the workspace.
        path: String,
        /// `add`, `update` or `delete`; `null` while there is no diff (in
        /// `item.started`, or when the change failed).
        change: Option<FileChangeKind>,
        /// Unified diff of the change (empty while there is none).
        diff: String,
        /// Lines the diff adds.
        lines_added: usize,
        /// Lines the diff removes.
        lines_removed: usize,
        /// Why the change failed (status `failed`); else `null`.
        error: Option<String>,
    },
    /// Any other tool call (reading and searching files, MCP tools, ...).
    ToolCall {
        /// The tool's name.
        tool: String,
        /// Its arguments (a JSON string when the model's were not valid JSON).
        arguments: Value,
        /// Its result, on success; else `null`.
        result: Option<String>,
        /// Its error, on failure; else `null`.
        error: Option<String>,
    },
    /// The conversation was compacted: from here on the model sees a
    /// summary instead of what came before.
    ContextCompaction {
        /// `auto` (the context was nearly full), `manual` or `clear`.
        trigger: String,
        /// The model's summary of the earlier conversation (empty when cleared).
        summary: String,
        /// Estimated context tokens before.
        tokens_before: u64,
        /// Estimated context tokens after.
        tokens_after: u64,
    },
    /// A tool call that waits for a human's approval.
    Approval {
        /// Id to answer it with.
        approval_id: String,
        /// The tool asking (`shell`, `write_file`, ...).
        tool: String,
        /// The command line, for shell calls; else `null`.
        command: Option<String>,
        /// Why approval is needed.
        reason: String,
        /// The answer; `null` until given.
        decision: Option<ApprovalDecision>,
        /// Who answered; `null` until answered.
        resolved_by: Option<ResolvedBy>,
    },
    /// Questions the agent asked the user (`request_user_input`).
    UserInput {
        /// Id to answer it with.
        request_id: String,
        /// Each `{id, header, question, options: [{label, description}],
        /// allow_free_text, multi_select}`.
        questions: Value,
        /// Each `{id, selected?, text?}`; `null` until answered.
        answers: Option<Value>,
        /// Who resolved it; `null` until resolved (and after a restart).
        resolved_by: Option<ResolvedBy>,
    },
    /// A tool call handed to an API client (a thread with an external or
    /// hybrid lane).
    ExternalTask {
        /// Id to complete it with.
        task_id: String,
        /// The tool's name.
        tool: String,
        /// `external` (a client runs it) or `hybrid` (the engine runs it too).
        mode: TaskMode,
        /// The call's arguments.
        arguments: Value,
        /// The result; `null` until given.
        result: Option<String>,
        /// The error, if it failed or timed out; else `null`.
        error: Option<String>,
    },
    /// Output the model submitted against a requested JSON Schema.
    StructuredOutput {
        /// The schema's name, when one was given; else `null`.
        schema_name: Option<String>,
        /// The accepted output (`null` while in progress).
        output: Value,
    },
    /// The agent's task list, replaced as a whole.
    TodoList {
        /// Its tasks, in order.
        items: Vec<Todo>,
    },
    /// Something went wrong in the turn (a model error, a limit).
    Error {
        /// One line, human-readable.
        message: String,
    },
}

/// What a file change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FileChangeKind {
    /// A new file.
    Add,
    /// An existing file changed.
    Update,
    /// A file removed.
    Delete,
}

/// A human's (or a timeout's) answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call and identical ones for the rest of the session.
    ApproveForSession,
    /// Do not run it.
    Deny,
    /// Do not run it and end the turn.
    Abort,
}

/// Who answered an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResolvedBy {
    /// A client.
    Client,
    /// Its timeout, by policy.
    Timeout,
    /// An interrupt of the turn.
    Interrupt,
}

/// Who runs an external task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TaskMode {
    /// The engine (not handed out; listed for completeness).
    Internal,
    /// A client.
    External,
    /// The engine, with clients observing.
    Hybrid,
}

/// One task of a `todo_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Todo {
    /// Stable id, unique in the list.
    pub id: String,
    /// What to do.
    pub text: String,
    /// Where it is.
    pub status: TodoStatus,
    /// How much it matters.
    pub priority: TodoPriority,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

/// How much a task matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoPriority {
    /// Do first.
    High,
    /// The default.
    Medium,
    /// When there is time.
    Low,
}

impl From<&stored::Item> for Item {
    fn from(item: &stored::Item) -> Self {
        Item {
            id: item.id.to_string(),
            details: ItemDetails::of(item),
            status: item.status.into(),
        }
    }
}

impl ItemDetails {
    /// The details of a stored item. Left out: provider data sent back to
    /// the model (reasoning signatures), the command's process id, a
    /// compaction's kept user messages, an approval's request details
    /// beyond tool, command and reason, an external task's lane and time
    /// limit, a user message's idempotency key.
    fn of(item: &stored::Item) -> ItemDetails {
        use stored::ItemKind as K;
        // What the model was told when a command or an edit failed.
        let failure = || {
            (item.status == stored::ItemStatus::Failed)
                .then(|| item.tool_call.as_ref().and_then(|c| c.output.clone()))
                .flatten()
        };
        match &item.kind {
            K::UserMessage { text, .. } => ItemDetails::UserMessage { text: text.clone() },
            K::AgentMessage { text } => ItemDetails::AgentMessage { text: text.clone() },
            K::Reasoning { text, .. } => ItemDetails::Reasoning { text: text.clone() },
            K::CommandExecution {
                command,
                cwd,
                output,
                exit_code,
                duration_ms,
                ..
            } => ItemDetails::CommandExecution {
                command: command.clone(),
                cwd: cwd.clone(),
                aggregated_output: output.clone(),
                exit_code: *exit_code,
                duration_ms: *duration_ms,
                error: failure(),
            },
            K::FileChange { path, diff } => {
                let stat = projection::diff_stat(diff);
                ItemDetails::FileChange {
                    path: path.clone(),
                    change: stat.kind.map(FileChangeKind::from),
                    diff: diff.clone(),
                    lines_added: stat.added,
                    lines_removed: stat.removed,
                    error: failure(),
                }
            }
            K::ToolCall {
                name,
                arguments,
                result,
                error,
            } => ItemDetails::ToolCall {
                tool: name.clone(),
                arguments: arguments.clone(),
                result: result.clone(),
                error: error.clone(),
            },
            K::ContextCompaction {
                summary,
                tokens_before,
                tokens_after,
                trigger,
                ..
            } => ItemDetails::ContextCompaction {
                trigger: trigger.clone(),
                summary: summary.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            K::Approval {
                approval_id,
                request,
                decision,
                resolved_by,
            } => ItemDetails::Approval {
                approval_id: approval_id.clone(),
                tool: request.tool.clone(),
                command: request.command.clone(),
                reason: request.reason.clone(),
                decision: decision.as_ref().map(|d| d.kind().into()),
                resolved_by: resolved_by.map(ResolvedBy::from),
            },
            K::UserInput {
                request_id,
                questions,
                answers,
                resolved_by,
                ..
            } => ItemDetails::UserInput {
                request_id: request_id.clone(),
                questions: serde_json::to_value(questions).unwrap_or_default(),
                answers: answers
                    .as_ref()
                    .map(|a| serde_json::to_value(a).unwrap_or_default()),
                resolved_by: resolved_by.map(ResolvedBy::from),
            },
            K::ExternalTask {
                task_id,
                tool,
                mode,
                payload,
                result,
                error,
                ..
            } => ItemDetails::ExternalTask {
                task_id: task_id.clone(),
                tool: tool.clone(),
                mode: (*mode).into(),
                arguments: payload.clone(),
                result: result.clone(),
                error: error.clone(),
            },
            K::StructuredOutput {
                schema_name,
                payload,
            } => ItemDetails::StructuredOutput {
                schema_name: schema_name.clone(),
                output: payload.clone(),
            },
            K::TodoList { todos } => ItemDetails::TodoList {
                items: todos.iter().map(Todo::from).collect(),
            },
            K::Error { message } => ItemDetails::Error {
                message: message.clone(),
            },
        }
    }
}

impl From<projection::FileChangeKind> for FileChangeKind {
    fn from(kind: projection::FileChangeKind) -> Self {
        match kind {
            projection::FileChangeKind::Add => Self::Add,
            projection::FileChangeKind::Update => Self::Update,
            projection::FileChangeKind::Delete => Self::Delete,
        }
    }
}

impl From<stored::ApprovalDecisionKind> for ApprovalDecision {
    fn from(d: stored::ApprovalDecisionKind) -> Self {
        match d {
            stored::ApprovalDecisionKind::Approve => ApprovalDecision::Approve,
            stored::ApprovalDecisionKind::ApproveForSession => ApprovalDecision::ApproveForSession,
            stored::ApprovalDecisionKind::Deny => ApprovalDecision::Deny,
            stored::ApprovalDecisionKind::Abort => ApprovalDecision::Abort,
        }
    }
}

impl From<stored::ResolvedBy> for ResolvedBy {
    fn from(r: stored::ResolvedBy) -> Self {
        match r {
            stored::ResolvedBy::Client => ResolvedBy::Client,
            stored::ResolvedBy::Timeout => ResolvedBy::Timeout,
            stored::ResolvedBy::Interrupt => ResolvedBy::Interrupt,
        }
    }
}

impl From<stored::HandlerMode> for TaskMode {
    fn from(m: stored::HandlerMode) -> Self {
        match m {
            stored::HandlerMode::Internal => TaskMode::Internal,
            stored::HandlerMode::External => TaskMode::External,
            stored::HandlerMode::Hybrid => TaskMode::Hybrid,
        }
    }
}

impl From<&stored::TodoItem> for Todo {
    fn from(t: &stored::TodoItem) -> Self {
        Todo {
            id: t.id.clone(),
            text: t.content.clone(),
            status: match t.status {
                stored::TodoStatus::Pending => TodoStatus::Pending,
                stored::TodoStatus::InProgress => TodoStatus::InProgress,
                stored::TodoStatus::Completed => TodoStatus::Completed,
                stored::TodoStatus::Cancelled => TodoStatus::Cancelled,
            },
            priority: match t.priority {
                stored::TodoPriority::High => TodoPriority::High,
                stored::TodoPriority::Medium => TodoPriority::Medium,
                stored::TodoPriority::Low => TodoPriority::Low,
            },
        }
    }
}
