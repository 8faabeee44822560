//! A thread's engine notifications as `session/update`s: `tools.rs` says
//! what a tool call is (kind, title, files), `diff.rs` turns a file
//! change's unified diff into the texts before and after, `mapper.rs` maps
//! live notifications, `history.rs` replays a stored thread.

mod diff;
mod history;
mod mapper;
mod tools;

pub(crate) use diff::diff_texts;
pub(crate) use history::replay;
pub(crate) use mapper::{Terminals, UpdateMapper};
pub(crate) use tools::{describe, plan_entries};
