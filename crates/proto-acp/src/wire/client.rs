//! What the agent asks the client: permission, files, terminals, and the
//! user's answers to questions (elicitation).

use serde::{Deserialize, Serialize};

use super::ToolCallUpdate;

/// `session/request_permission`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: String,
    /// The call asked about.
    pub tool_call: ToolCallUpdate,
    /// The answers offered.
    pub options: Vec<PermissionOption>,
}

/// An answer offered (`PermissionOption`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// Its id.
    pub option_id: String,
    /// Its label.
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: &'static str,
}

/// `session/request_permission`'s result.
#[derive(Debug, Clone, Deserialize)]
pub struct RequestPermissionResponse {
    /// What the user chose.
    pub outcome: PermissionOutcome,
}

/// What the user chose (`RequestPermissionOutcome`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The prompt was cancelled.
    Cancelled,
    /// An option.
    Selected {
        /// Its id.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

/// `fs/read_text_file`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest {
    /// The session.
    pub session_id: String,
    /// Absolute path.
    pub path: String,
}

/// `fs/read_text_file`'s result.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadTextFileResponse {
    /// The text (the editor's buffer when it has the file open).
    pub content: String,
}

/// `fs/write_text_file`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest {
    /// The session.
    pub session_id: String,
    /// Absolute path.
    pub path: String,
    /// The whole new text.
    pub content: String,
}

/// `terminal/create`'s params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalRequest {
    /// The session.
    pub session_id: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<EnvVariable>,
    /// Where it runs (absolute).
    pub cwd: String,
    /// Output kept by the client.
    pub output_byte_limit: u64,
}

/// An environment variable given to the client.
#[derive(Debug, Clone, Serialize)]
pub struct EnvVariable {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// `terminal/create`'s result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalResponse {
    /// The terminal.
    pub terminal_id: String,
}

/// The params of `terminal/output`, `wait_for_exit`, `kill`, `release`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRequest {
    /// The session.
    pub session_id: String,
    /// The terminal.
    pub terminal_id: String,
}

/// `terminal/output`'s result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutputResponse {
    /// What it printed (the client's capped copy).
    pub output: String,
    /// Whether the start was cut.
    #[serde(default)]
    pub truncated: bool,
    /// How it ended, once it has.
    #[serde(default)]
    pub exit_status: Option<TerminalExitStatus>,
}

/// How a terminal's command ended (also `terminal/wait_for_exit`'s result).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExitStatus {
    /// Its exit code.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The signal that killed it.
    #[serde(default)]
    pub signal: Option<String>,
}

/// `elicitation/create`'s params, in form mode, tied to a session and the
/// tool call that asks (`CreateElicitationRequest`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateElicitationRequest {
    /// The session.
    pub session_id: String,
    /// The tool call that asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Always `form`.
    pub mode: &'static str,
    /// What is asked, for people.
    pub message: String,
    /// The form's fields.
    pub requested_schema: ElicitationSchema,
}

/// A form: an object schema of primitive fields (`ElicitationSchema`).
#[derive(Debug, Clone, Serialize)]
pub struct ElicitationSchema {
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The fields, in the order shown.
    pub properties: Properties,
    /// Fields the user must fill.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
}

/// A form's fields, serialized as an object in their order.
#[derive(Debug, Clone, Default)]
pub struct Properties(pub Vec<(String, ElicitationProperty)>);

impl Serialize for Properties {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, property) in &self.0 {
            map.serialize_entry(name, property)?;
        }
        map.end()
    }
}

/// One field (`ElicitationPropertySchema`): text, one option (`oneOf`), or
/// several (`array` of titled options).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ElicitationProperty {
    /// A string: typed, or one of the options.
    String {
        /// Its title.
        title: String,
        /// What is asked.
        description: String,
        /// The options, when one is picked.
        #[serde(rename = "oneOf", skip_serializing_if = "Option::is_none")]
        one_of: Option<Vec<EnumOption>>,
        /// The longest text taken.
        #[serde(rename = "maxLength", skip_serializing_if = "Option::is_none")]
        max_length: Option<u32>,
    },
    /// Several of the options.
    Array {
        /// Its title.
        title: String,
        /// What is asked.
        description: String,
        /// The options.
        items: TitledItems,
    },
}

/// The options of a multi-select field (`TitledMultiSelectItems`).
#[derive(Debug, Clone, Serialize)]
pub struct TitledItems {
    /// The options.
    #[serde(rename = "anyOf")]
    pub any_of: Vec<EnumOption>,
}

/// An option (`EnumOption`).
#[derive(Debug, Clone, Serialize)]
pub struct EnumOption {
    /// The value the answer holds.
    #[serde(rename = "const")]
    pub value: String,
    /// What the user sees.
    pub title: String,
    /// What choosing it means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `elicitation/create`'s result (`CreateElicitationResponse`).
#[derive(Debug, Clone, Deserialize)]
pub struct CreateElicitationResponse {
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    /// The fields filled, with `accept`.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}
