//! Gantry's domain model: agents, threads, turns, items and the events that
//! change them. Pure data (serde), no I/O: every other crate speaks these types.
//!
//! A thread's state is the fold of its events ([`ThreadView::apply`]); the
//! engine appends events, the store persists them, adapters project them.

mod agent;
mod checkpoint;
pub mod cron;
mod event;
mod ids;
mod image;
mod item;
mod lanes;
pub mod lsp;
pub mod mcp;
pub mod memory;
mod model_info;
mod policy;
mod provider;
mod sandbox;
mod settings_patch;
pub mod skill;
mod structured;
mod thread;
pub mod time;
mod todo;
mod tool;
pub mod trace_context;
mod turn;
pub mod user_input;
mod view;

pub use agent::{Agent, GANTRY_SDK};
pub use checkpoint::{CheckpointRecord, NotKeptFile};
pub use event::{Delta, DeltaKind, Event, EventPayload, ModelCall};
pub use ids::{AgentId, ItemId, ThreadId, TurnId, new_id};
pub use image::{IMAGE_MEDIA_TYPES, ImagePart, MAX_IMAGE_BYTES, MAX_IMAGES, MAX_MESSAGE_BODY};
pub use item::{Item, ItemKind, ItemStatus, Refusal, ResolvedBy, ToolCallOrigin};
pub use lanes::{DEFAULT_EXTERNAL_TIMEOUT_MS, HandlerMode, LaneHandler};
pub use model_info::{Modalities, ModelCost, ModelInfo, ModelLimit};
pub use policy::{
    ApprovalDecision, ApprovalDecisionKind, ApprovalPolicy, ApprovalRequest, ConfirmationPolicy,
    DEFAULT_CONFIRMATION_TIMEOUT_MS, Lane, PermissionRules, RejectConfig, RuleDecision,
    ThreadPolicy, TimeoutAction,
};
pub use provider::{ProviderConfig, ProviderKind, mask_key};
pub use sandbox::SandboxMode;
pub use settings_patch::ThreadSettingsPatch;
pub use structured::{
    AgentGoal, Complexity, ExecutionPlan, GoalCheck, PlanStep, PlanStepStatus, ThreadGoal,
    ThreadGoalStatus,
};
pub use thread::{
    ForkOrigin, ModelEndpoint, QueuedInput, Thread, ThreadSettings, ThreadStatus, TurnLimits,
};
pub use todo::{TodoItem, TodoPriority, TodoStatus, validate_todos};
pub use tool::ToolSpec;
pub use turn::{Turn, TurnFailure, TurnStatus, TurnTrace, Usage};
pub use user_input::{
    UserInputAnswer, UserInputOffer, UserInputOption, UserInputPolicy, UserInputQuestion,
};
pub use view::{ThreadView, TurnView};
