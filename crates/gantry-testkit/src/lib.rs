//! What Gantry's tests, benches and demos share.
//!
//! - The scripted mock LLM ([`MockLlm`], [`Script`], [`Step`], ...): a real
//!   HTTP server on 127.0.0.1 speaking OpenAI Chat Completions, OpenAI
//!   Responses and Anthropic Messages over real SSE. It lives in
//!   `gantry-scripted-model` (the `gantry` binary serves it for
//!   `--model scripted:FILE`) and is re-exported here; see that crate for the
//!   script format.
//! - [`browser`]: a headless chromium over WebDriver, for the dashboard.
//! - [`github`]: a fake GitHub REST API for GitHub App flows, with test-only
//!   keys.
//! - [`process`]: checks tests use to prove no process was left behind.
//! - [`postgres`]: a fresh PostgreSQL database per test, dropped after it.
//! - [`local_model`]: a real small model on a real local server
//!   (llama.cpp's OpenAI-compatible one).

pub mod browser;
pub mod github;
pub mod local_model;
pub mod postgres;
pub mod process;

pub use gantry_scripted_model::{
    HttpError, MockLlm, RawReply, RecordedImage, RecordedRequest, Reply, Script, ScriptError, Step,
    ToolCallSpec, UsageSpec,
};
