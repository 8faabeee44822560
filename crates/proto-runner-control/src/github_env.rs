//! GitHub credentials for a thread's `git` and `gh` commands: an
//! installation token from the control plane, put in that one command's
//! environment as it starts (see [`git_env`]); never stored, never logged.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use gantry_core::CommandEnvSource;
use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_types::ThreadId;

use super::endpoint::Outbound;
use super::github_tokens::{GithubTokens, git_env};

/// The engine's [`CommandEnvSource`] for a runner: commands that run `git`
/// or `gh` get a token for the first installation the control plane lists
/// for this runner; other commands get nothing.
#[derive(Debug, Default)]
pub struct GithubCommandEnv {
    /// Tokens over the current connection; none while disconnected.
    tokens: RwLock<Option<Arc<GithubTokens<Outbound>>>>,
}

impl GithubCommandEnv {
    /// A source with no connection yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Fetches tokens over a new connection (the cache starts empty).
    pub(crate) fn connect(&self, client: AgentRunnerControlServiceClient<Outbound>) {
        let tokens = Arc::new(GithubTokens::new(client));
        *self.tokens.write().unwrap_or_else(|p| p.into_inner()) = Some(tokens);
    }

    fn current(&self) -> Option<Arc<GithubTokens<Outbound>>> {
        self.tokens
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[async_trait]
impl CommandEnvSource for GithubCommandEnv {
    async fn env_for(&self, thread: &ThreadId, command: &str) -> Vec<(String, String)> {
        if !runs_git(command) {
            return Vec::new();
        }
        let Some(tokens) = self.current() else {
            tracing::warn!(thread = %thread, "no GitHub token for a git command: not connected to the control plane");
            return Vec::new();
        };
        let installation = match tokens.installations().await {
            Ok(ids) => match ids.first() {
                Some(id) => *id,
                None => return Vec::new(),
            },
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "cannot list GitHub installations");
                return Vec::new();
            }
        };
        match tokens.token(installation).await {
            Ok(token) => git_env(&token),
            Err(e) => {
                tracing::warn!(thread = %thread, installation, error = %e, "cannot get a GitHub token");
                Vec::new()
            }
        }
    }
}

/// Whether a shell line runs `git` or `gh` (by name or path) anywhere.
fn runs_git(command: &str) -> bool {
    command
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '`' | '$'))
        .map(|word| word.rsplit('/').next().unwrap_or(word))
        .any(|name| name == "git" || name == "gh")
}

#[cfg(test)]
mod tests {
    use super::runs_git;

    #[test]
    fn git_and_gh_are_recognised_anywhere_in_the_line() {
        for line in [
            "git push",
            "cd repo && git commit -m x",
            "/usr/bin/git fetch",
            "gh pr create",
            "echo $(gh auth status)",
            "make;git status",
        ] {
            assert!(runs_git(line), "{line}");
        }
        for line in ["ls", "echo github", "cargo build", "digit"] {
            assert!(!runs_git(line), "{line}");
        }
    }
}
