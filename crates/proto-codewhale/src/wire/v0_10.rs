//! What CodeWhale 0.10 (`codewhale_protocol` 0.10.2) adds to the seed's
//! JSON and changes in it, as Gantry's own types: its request enums (new
//! kinds: `goal_record_progress`, `config_reload`, `submit_user_input`; a
//! message's `allowed_tools`, `images` and `maxOutputTokens`), the
//! clarification questions of `user_input_request`. Everything else is
//! the seed's ([`super`]): the parameter structs (which take 0.10's
//! `operation_key`), the answers (a goal's 0.10 counters are optional
//! there) and the frames. The enums are apart from the seed's so that each version's
//! listener refuses the other's kinds with its own list of them.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ThreadForkParams, ThreadGoalGetParams, ThreadGoalSetParams, ThreadListParams, ThreadReadParams,
    ThreadResumeParams, ThreadSetNameParams, ThreadStartParams,
};

/// An image of a turn's input, inline (never a path or a URL).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageInput {
    /// Its media type (`image/png`).
    pub mime: String,
    /// Its bytes, base64.
    pub data_base64: String,
}

/// `goal_record_progress`: a client's account of a goal's use.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadGoalProgressParams {
    /// The thread.
    pub thread_id: String,
    /// Tokens used.
    #[serde(default)]
    pub token_delta: i64,
    /// Seconds spent.
    #[serde(default)]
    pub time_delta_seconds: i64,
    /// Whether a continuation ran.
    #[serde(default)]
    pub record_continuation: bool,
}

/// A 0.10 request about threads, tagged by `kind` (the seed's kinds, in
/// 0.10's order, and `goal_record_progress`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThreadRequest {
    /// A new thread; `metadata` carries its `operation_key`.
    Create {
        /// The create-thread fields.
        #[serde(default)]
        metadata: Value,
    },
    /// A new thread.
    Start(ThreadStartParams),
    /// Go on with a thread.
    Resume(ThreadResumeParams),
    /// A new thread with another's history.
    Fork(ThreadForkParams),
    /// Threads, most recently updated first.
    List(ThreadListParams),
    /// One thread.
    Read(ThreadReadParams),
    /// Names a thread.
    SetName(ThreadSetNameParams),
    /// Sets the goal (refused on these transports).
    GoalSet(ThreadGoalSetParams),
    /// The goal.
    GoalGet(ThreadGoalGetParams),
    /// Removes the goal.
    GoalClear(ThreadGoalGetParams),
    /// A client's account of a goal's use (refused: only the engine counts).
    GoalRecordProgress(ThreadGoalProgressParams),
    /// Archives a thread.
    Archive {
        /// The thread.
        thread_id: String,
    },
    /// Unarchives a thread.
    Unarchive {
        /// The thread.
        thread_id: String,
    },
    /// A user message: one turn, answered when it ends.
    Message(MessageParams),
}

/// A message's turn: its input and what it may use.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageParams {
    /// The thread.
    pub thread_id: String,
    /// What the user says.
    pub input: String,
    /// The tools the turn may call: `[]` for none (the only turn the
    /// reference's transports run); absent, the thread's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Images of the input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageInput>,
    /// Cap on the tokens of each model answer.
    #[serde(
        default,
        rename = "maxOutputTokens",
        alias = "max_output_tokens",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_output_tokens: Option<NonZeroU32>,
}

/// A 0.10 request about the server, tagged by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppRequest {
    /// What the server offers.
    Capabilities,
    /// One configuration value.
    ConfigGet {
        /// Its key.
        key: String,
    },
    /// Sets a configuration value.
    ConfigSet {
        /// Its key.
        key: String,
        /// Its value.
        value: String,
    },
    /// Removes a configuration value.
    ConfigUnset {
        /// Its key.
        key: String,
    },
    /// Every configuration value.
    ConfigList,
    /// Reads the configuration again.
    ConfigReload,
    /// The models threads may use.
    Models,
    /// Threads loaded in memory.
    ThreadLoadedList,
    /// Answers to a `user_input_request`.
    SubmitUserInput {
        /// The request answered.
        request_id: String,
        /// One answer per question.
        answers: Vec<UserInputAnswer>,
    },
}

/// A 0.10 one-shot prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptRequest {
    /// The tools it may call: only `[]` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Cap on the tokens of each model answer.
    #[serde(
        default,
        rename = "maxOutputTokens",
        alias = "max_output_tokens",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_output_tokens: Option<NonZeroU32>,
    /// The thread to run it on; one of its own when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// What to ask.
    pub prompt: String,
    /// Images of the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageInput>,
    /// The model of a thread of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// An option offered for a clarification question.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserInputOption {
    /// Short label (what is submitted when picked).
    pub label: String,
    /// What it means.
    pub description: String,
}

/// A clarification question.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserInputQuestion {
    /// Compact title.
    pub header: String,
    /// What answers name it by.
    pub id: String,
    /// The question.
    pub question: String,
    /// Suggested answers.
    pub options: Vec<UserInputOption>,
    /// Whether a typed answer is welcome too.
    #[serde(default)]
    pub allow_free_text: bool,
    /// Whether several options may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// The agent asks the user (`user_input_request`'s `request`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserInputRequest {
    /// The tool call asking.
    pub call_id: String,
    /// Its turn.
    pub turn_id: String,
    /// What answers name it by.
    pub request_id: String,
    /// The questions.
    pub questions: Vec<UserInputQuestion>,
}

/// An answer to one question.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserInputAnswer {
    /// The question's id.
    pub id: String,
    /// The option's label, or `Other` for a typed answer.
    pub label: String,
    /// The answer (the label, or the typed text).
    pub value: String,
}
