//! gantry-llm's integration tests, in one binary (one link, not one per file).

mod anthropic;
mod common;
mod local_model;
mod openai_chat;
mod openai_responses;
