//! Model clients. The engine talks to any LLM through [`ModelClient`]; this
//! crate holds that port, the provider-neutral request/response model, the
//! error taxonomy with its retry policy, the shared streaming transport, and
//! one client per API: OpenAI Chat Completions (which also serves Ollama, vLLM
//! and any other OpenAI-compatible server), OpenAI Responses, and Anthropic
//! Messages.

pub mod anthropic;
pub mod catalog;
mod config;
mod error;
mod history;
mod http;
mod model;
pub mod openai_chat;
pub mod openai_responses;
pub mod providers;
mod retry;
mod sse;
mod tools;
mod wire;

pub use config::ClientConfig;
pub use error::ModelError;
pub use history::History;
pub use model::{
    Message, ModelClient, ModelEvent, ModelRequest, ModelStream, OutputSchema, REFUSAL,
    ReasoningBlock, ToolCall,
};
pub use retry::RetryPolicy;
pub use tools::Tools;
