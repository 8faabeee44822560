//! The port through which a host adds variables to one command's
//! environment as it starts: credentials minted for that command (a GitHub
//! installation token for `git`), which must reach it and nothing else.

use async_trait::async_trait;
use gantry_types::ThreadId;

/// Variables for one command a thread's tool is about to run, over the
/// engine's command environment. They are not recorded anywhere: not in the
/// command's item, not in the log.
#[async_trait]
pub trait CommandEnvSource: Send + Sync {
    /// The variables for `command` (the shell line) in `thread`; empty for none.
    async fn env_for(&self, thread: &ThreadId, command: &str) -> Vec<(String, String)>;
}
