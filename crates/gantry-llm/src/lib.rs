//! Model clients. The engine talks to any LLM through [`ModelClient`]; this
//! crate holds that port, the provider-neutral request/response model, the
//! error taxonomy with its retry policy, and the OpenAI Chat Completions client
//! (which also serves Ollama, vLLM and any other OpenAI-compatible server).

mod error;
mod http;
mod model;
pub mod openai_chat;
mod retry;
mod sse;

pub use error::ModelError;
pub use model::{
    Message, ModelClient, ModelEvent, ModelRequest, ModelStream, ReasoningBlock, ToolCall,
};
pub use retry::RetryPolicy;
