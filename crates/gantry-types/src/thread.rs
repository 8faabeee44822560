//! Threads: a conversation with an agent in one workspace.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    AgentId, LaneHandler, ProviderKind, ThreadGoal, ThreadId, ThreadPolicy, TodoItem, TurnId, Usage,
};

/// What a thread is doing right now. Whether it is paused is
/// [`Thread::paused`], apart: a paused thread may still have a turn open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// No turn is running. (Earlier releases stored `paused` as a status
    /// in the thread index; it reads as idle, the events say the rest.)
    #[serde(alias = "paused")]
    Idle,
    /// A turn is running.
    Running,
    /// The last turn failed.
    Failed,
}

/// Where a forked thread came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The thread that was forked.
    pub thread_id: ThreadId,
    /// The last turn of the source thread that the fork contains.
    pub turn_id: TurnId,
}

/// A user input waiting for the running turn to finish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedInput {
    /// Becomes the id of the turn the input starts.
    pub turn_id: TurnId,
    /// The user's text.
    pub text: String,
    /// The sender's idempotency key, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Images sent with the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::ImagePart>,
    /// What the turn it starts may use.
    #[serde(default, skip_serializing_if = "TurnLimits::is_none")]
    pub limits: TurnLimits,
    /// Nobody can answer questions in the turn it starts (a scheduled
    /// job's prompt): the model is not offered `request_user_input`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattended: bool,
    /// The W3C `traceparent` it was sent with (see [`crate::Turn`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
}

/// What one turn may use, narrower than its thread allows: the tools
/// offered to the model (none with `Some([])`) and a cap on the tokens of
/// each model answer. A message that joins a running turn (steered) takes
/// that turn's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnLimits {
    /// The tools offered, by name; every tool the thread has when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Cap on each model answer's tokens, over the thread's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl TurnLimits {
    /// Whether it narrows nothing.
    pub fn is_none(&self) -> bool {
        self.allowed_tools.is_none() && self.max_output_tokens.is_none()
    }
}

/// A thread's metadata (its turns and items live in [`crate::ThreadView`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// UUIDv7 id.
    pub id: ThreadId,
    /// Optional human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The agent it runs under, if any: its skills are offered too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// Absolute path of the workspace the agent works in.
    pub cwd: String,
    /// Model the thread talks to.
    pub model: String,
    /// Reasoning effort asked of the model (`low`, `high`, ...); the
    /// engine's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Extra instructions given to the model on every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The thread's own model server, instead of the configured providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<ModelEndpoint>,
    /// Sampling temperature asked of the model; the provider's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Cap on the tokens of each model answer; the client's default when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// What clients keep with the thread (the engine does not read it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Running, idle, ...
    pub status: ThreadStatus,
    /// Archived threads are hidden from default listings and accept no input.
    #[serde(default)]
    pub archived: bool,
    /// The start of the first user message, for listings.
    #[serde(default)]
    pub preview: String,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
    /// Set when the thread was forked from another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
    /// Tokens used by all turns so far.
    #[serde(default)]
    pub usage: Usage,
    /// What those tokens cost in USD, from the model catalog.
    #[serde(default)]
    pub cost_usd: f64,
    /// Paused: no model or tool call starts until resumed.
    #[serde(default)]
    pub paused: bool,
    /// The agent's task list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<TodoItem>,
    /// What the thread's tool calls may do.
    #[serde(default)]
    pub policy: ThreadPolicy,
    /// Lanes not handled by the engine alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_handlers: Vec<LaneHandler>,
    /// What the thread works toward, with its token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<ThreadGoal>,
    /// Seq of the last event applied.
    #[serde(default)]
    pub last_seq: u64,
}

/// A model server a thread talks to directly (a protocol's per-session LLM
/// settings), bypassing the provider registry. `Debug` masks the key, so a
/// log line of a thread's settings never holds it.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelEndpoint {
    /// The API it speaks.
    pub kind: ProviderKind,
    /// Base URL (with or without the `/v1`); the vendor's own when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key. Never serialized: no event, view or log can carry it,
    /// whatever an adapter sends. The engine keeps it beside the thread
    /// (`Store::put_thread_key`) and puts it back when the thread loads.
    /// Read when given (a client's settings; a log written before keys
    /// were kept apart).
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ModelEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEndpoint")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_deref().map(crate::mask_key))
            .finish()
    }
}

/// The settings of a thread a client may change after creating it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSettings {
    /// Optional name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model id.
    pub model: String,
    /// Reasoning effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Extra instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The thread's own model server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<ModelEndpoint>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Cap on the tokens of each model answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// What clients keep with the thread.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// The workspace (absolute path). `None` in events of releases that
    /// could not move a thread: applying those keeps the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl Thread {
    /// Its changeable settings.
    pub fn settings(&self) -> ThreadSettings {
        ThreadSettings {
            name: self.name.clone(),
            model: self.model.clone(),
            reasoning: self.reasoning.clone(),
            instructions: self.instructions.clone(),
            endpoint: self.endpoint.clone(),
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            metadata: self.metadata.clone(),
            cwd: Some(self.cwd.clone()),
        }
    }

    /// Replaces its changeable settings.
    pub fn apply_settings(&mut self, settings: &ThreadSettings) {
        self.name.clone_from(&settings.name);
        self.model.clone_from(&settings.model);
        self.reasoning.clone_from(&settings.reasoning);
        self.instructions.clone_from(&settings.instructions);
        self.endpoint.clone_from(&settings.endpoint);
        self.temperature = settings.temperature;
        self.max_output_tokens = settings.max_output_tokens;
        self.metadata.clone_from(&settings.metadata);
        if let Some(cwd) = &settings.cwd {
            self.cwd.clone_from(cwd);
        }
    }
}

impl ThreadSettings {
    /// One line on what is wrong with the settings, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.model.trim().is_empty() {
            return Err("model: must not be empty".to_owned());
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("temperature: {t} is outside 0..=2"));
        }
        if let Some(cwd) = &self.cwd
            && !std::path::Path::new(cwd).is_absolute()
        {
            return Err(format!("cwd: `{cwd}` must be an absolute path"));
        }
        if self.max_output_tokens == Some(0) {
            return Err("max_output_tokens: must be at least 1".to_owned());
        }
        if let Some(url) = self.endpoint.as_ref().and_then(|e| e.base_url.as_deref())
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "base_url: `{url}` must start with http:// or https://"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    #[test]
    fn an_index_row_of_an_earlier_release_with_status_paused_still_reads() {
        let status: ThreadStatus = serde_json::from_str(r#""paused""#).unwrap();
        assert_eq!(status, ThreadStatus::Idle);
        assert_eq!(serde_json::to_string(&status).unwrap(), r#""idle""#);
    }

    #[test]
    fn debug_output_never_holds_the_key() {
        let endpoint = ModelEndpoint {
            kind: crate::ProviderKind::OpenaiChat,
            base_url: None,
            api_key: Some("sk-test-SECRET123456".into()),
        };
        let shown = format!("{endpoint:?}");
        assert!(!shown.contains("SECRET123456"), "{shown}");
    }

    #[test]
    fn no_serialized_thread_or_settings_holds_the_key() {
        let endpoint = ModelEndpoint {
            kind: crate::ProviderKind::OpenaiChat,
            base_url: Some("http://127.0.0.1:1/v1".into()),
            api_key: Some("sk-test-SECRET123456".into()),
        };
        let json = serde_json::to_string(&endpoint).unwrap();
        assert!(!json.contains("SECRET123456"), "{json}");
        // A key a client sends is still read.
        let read: ModelEndpoint =
            serde_json::from_str(r#"{"kind":"openai-chat","api_key":"sk-given"}"#).unwrap();
        assert_eq!(read.api_key.as_deref(), Some("sk-given"));
    }
}
