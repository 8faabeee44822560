//! The Gantry engine. It hosts many threads at once, one actor task per live
//! thread; runs the agent loop against a [`gantry_llm::ModelClient`] with
//! [`gantry_tools::Tool`]s; records every state change as an event, persisted
//! through a [`gantry_store::Store`] by a group-committing writer; and
//! broadcasts events to subscribers that can join "from seq N".
//!
//! It knows no wire format: protocol adapters drive it through [`Engine`] and
//! project the [`Notification`]s of a [`Subscription`] onto their wire.

mod actor;
mod bus;
mod clock;
mod config;
mod context;
mod engine;
mod error;
mod live;
mod mcp_api;
mod plans;
pub mod policy;
mod providers;
mod skills_api;
mod structured_api;
mod todos;
mod turn;
mod writer;

pub use actor::ExternalTaskInfo;
pub use bus::{Notification, ResumeFrom, Subscription};
pub use clock::{Clock, SystemClock};
pub use config::{EngineConfig, ModelResolver, SingleModel};
pub use context::ContextUsage;
pub use engine::{CreateThread, Engine, EngineBuilder, IfBusy};
pub use error::EngineError;
pub use gantry_store::{ThreadPage, ThreadQuery};
pub use mcp_api::MCP_SERVERS_SETTING;
pub use providers::{DEFAULT_MODEL_SETTING, Providers, ProvidersConfig};
pub use structured_api::{
    DEFAULT_STRUCTURED_RETRIES, StructuredChunk, StructuredOutput, StructuredRequest,
    StructuredStream,
};
