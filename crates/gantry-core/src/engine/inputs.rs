//! What commands take: a thread's parameters, a message and how to treat it
//! while a turn runs.

use gantry_types::{ImagePart, TurnLimits};

use super::*;

/// What to do with a user message while a turn is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfBusy {
    /// Refuse with [`EngineError::Busy`].
    Reject,
    /// Inject it into the running turn.
    Steer,
    /// Run it as the next turn.
    Queue,
}

/// Where a keyed message went ([`Turns::send_once`](crate::Turns::send_once)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The turn it started, steered or was queued as.
    pub turn: TurnId,
    /// Whether it steered a running turn (else it starts or is queued as `turn`).
    pub steered: bool,
    /// False when the key was seen before and nothing was done.
    pub first_time: bool,
}

/// A user message a client sends: text, and images for models that read
/// them ([`Turns::send_input`](crate::Turns::send_input)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInput {
    /// The text (may be empty when images come with it).
    pub text: String,
    /// Images, each checked ([`ImagePart::check`]): at most
    /// [`gantry_types::MAX_IMAGES`], each at most
    /// [`gantry_types::MAX_IMAGE_BYTES`] decoded.
    pub images: Vec<ImagePart>,
    /// What the turn it starts may use (a message that joins a running
    /// turn takes that turn's).
    pub limits: TurnLimits,
    /// The W3C `traceparent` the request came with: recorded with the
    /// turn it starts, whose trace span it parents.
    pub trace_parent: Option<String>,
}

impl From<String> for UserInput {
    fn from(text: String) -> Self {
        UserInput {
            text,
            images: Vec::new(),
            limits: TurnLimits::default(),
            trace_parent: None,
        }
    }
}

impl From<&str> for UserInput {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// A user message on its way into a thread.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub text: String,
    pub key: Option<String>,
    pub images: Vec<ImagePart>,
    pub limits: TurnLimits,
    /// Nobody can answer questions in the turn it starts (a scheduled
    /// job's prompt, `gantry exec`): see `Turns::send_unattended`.
    pub unattended: bool,
    /// The request's W3C `traceparent`, if it came with one.
    pub trace_parent: Option<String>,
}

impl From<String> for Input {
    fn from(text: String) -> Self {
        Input {
            text,
            key: None,
            images: Vec::new(),
            limits: TurnLimits::default(),
            unattended: false,
            trace_parent: None,
        }
    }
}

/// Parameters of a new thread.
#[derive(Debug, Clone, Default)]
pub struct CreateThread {
    /// Workspace directory; must exist.
    pub cwd: PathBuf,
    /// Model id; the engine's default when `None`.
    pub model: Option<String>,
    /// Reasoning effort; the agent's, else the engine's default when `None`.
    pub reasoning: Option<String>,
    /// Extra instructions for the model.
    pub instructions: Option<String>,
    /// Optional name.
    pub name: Option<String>,
    /// What its tool calls may do (the default allows everything, as before).
    pub policy: ThreadPolicy,
    /// The agent it runs under: its model and instructions are the
    /// defaults, its installed skills are offered.
    pub agent: Option<AgentId>,
    /// The id a client chose (letters, digits, `-`, `_`, `.`, `:`; at most
    /// 128 characters); a fresh UUIDv7 when `None`.
    pub id: Option<ThreadId>,
    /// The thread's own model server, instead of the configured providers.
    pub endpoint: Option<ModelEndpoint>,
    /// Sampling temperature (0..=2).
    pub temperature: Option<f32>,
    /// Cap on the tokens of each model answer.
    pub max_output_tokens: Option<u32>,
    /// What the client keeps with the thread.
    pub metadata: BTreeMap<String, String>,
    /// Conversation the thread starts with, recorded as one completed turn
    /// the model sees as history.
    pub context: Vec<ContextMessage>,
}

/// A message of the conversation a thread starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextMessage {
    /// Who said it.
    pub role: ContextRole,
    /// What was said.
    pub text: String,
}

/// Who said a [`ContextMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextRole {
    /// The user.
    User,
    /// The agent.
    Assistant,
}
