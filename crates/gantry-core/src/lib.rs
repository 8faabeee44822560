//! The Gantry engine. It hosts many threads at once, one actor task per live
//! thread; runs the agent loop against a [`gantry_llm::ModelClient`] with
//! [`gantry_tools::Tool`]s; records every state change as an event, persisted
//! through a [`gantry_store::Store`] by a group-committing writer; and
//! broadcasts events to subscribers that can join "from seq N".
//!
//! It knows no wire format: protocol adapters drive it through [`Engine`] and
//! project the [`Notification`]s of a [`Subscription`] onto their wire.

mod actor;
mod agents_api;
mod bus;
mod cells;
mod clock;
mod command_env;
mod config;
mod context;
mod cron;
mod endpoints;
mod engine;
mod engine_events;
mod error;
mod follow;
mod images;
mod lines;
mod live;
mod lsp_api;
mod mcp_api;
mod memory;
mod plans;
pub mod projection;
mod providers;
mod skills_api;
mod structured_api;
mod thread_mcp;
mod todos;
mod tool_host;
mod turn;
mod user_input;
mod writer;

pub use actor::ExternalTaskInfo;
// The bounds between a turn and its thread's actor, each documented with why.
pub use actor::{STEER_CAPACITY, TURN_CHANNEL_CAPACITY};
pub use agents_api::{AgentSpec, Agents};
pub use bus::{MAX_HELD_DELTAS, Notification, Subscription};
pub use clock::{Clock, SystemClock};
pub use command_env::CommandEnvSource;
pub use config::{EngineConfig, ModelResolver, SingleModel};
pub use context::ContextUsage;
pub use cron::{DEFAULT_HISTORY_LIMIT, JobUpdate, Jobs, NewJob, ParsedSchedule, SchedulerHandle};
pub use engine::{
    CheckpointEntry, ContextMessage, ContextRole, CreateThread, Delivered, Engine, EngineBuilder,
    Feeds, IfBusy, Rewound, Safety, Settings, Storage, Threads, Turns, UserInput, valid_thread_id,
};
pub use engine_events::{EngineEvent, EngineEventKind, EngineEventNotice, EngineEvents};
pub use error::EngineError;
pub use follow::{Feed, ThreadFeed};
pub use lines::{Line, Lines};
// The policy, for adapters that validate rules or show a decision.
pub use gantry_policy as policy;
pub use gantry_store::{CompactMode, CompactRequest, Compaction, ThreadPage, ThreadQuery};
// A parsed skill, as the engine API returns it (the shared vocabulary of
// MCP servers and skills is in gantry_types::{mcp, skill}).
pub use gantry_tools::skills::Skill;
pub use lsp_api::Lsp;
pub use mcp_api::{MCP_SERVERS_SETTING, Mcp};
pub use memory::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, Memory, RECENT_WINDOW_MS};
pub use providers::{DEFAULT_MODEL_SETTING, ModelProviders, Providers, ProvidersConfig};
pub use skills_api::Skills;
pub use structured_api::{
    DEFAULT_STRUCTURED_RETRIES, Goals, Plans, Structured, StructuredChunk, StructuredOutput,
    StructuredRequest, StructuredStream,
};
pub use thread_mcp::THREAD_MCP_SERVERS_SETTING;
pub use tool_host::{
    CommandExit, CommandRunner, FileAccess, HostCommand, OutputSink, ToolHost, ToolHostSource,
};
pub use user_input::REQUEST_USER_INPUT;
pub use writer::StoreUnavailable;
