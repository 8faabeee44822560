//! The HTTP API against a real server on an ephemeral port, over an engine
//! whose model is the scripted mock LLM over real HTTP.

mod access;
mod browser;
mod catalog;
mod checkpoints;
mod common;
mod events;
mod structured;
mod threads;
mod turns;
mod user_input;
