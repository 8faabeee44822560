//! The port through which a host serves a thread's file and command tool
//! I/O itself: an editor that wants the agent's reads to see its unsaved
//! buffers, its writes to land in them, and its commands to run in its own
//! terminals. The engine asks the source once per tool call; the tools
//! check paths and build items as always (see `gantry_tools::host`).

use gantry_types::ThreadId;

pub use gantry_tools::OutputSink;
pub use gantry_tools::host::{CommandExit, CommandRunner, FileAccess, HostCommand, ToolHost};

/// What serves a thread's tool I/O.
pub trait ToolHostSource: Send + Sync {
    /// The host of `thread`'s tool calls now (the default: none, the tools
    /// do their own I/O).
    fn host_for(&self, thread: &ThreadId) -> ToolHost;
}
