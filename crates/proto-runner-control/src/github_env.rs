//! GitHub credentials for a thread's `git` and `gh` commands: an
//! installation token from the control plane (0.2.0's GitHub rpcs), or the
//! token in a file the runner was given (`--github-token-file`; 0.7.0 has
//! no GitHub rpcs), put in that one command's environment as it starts
//! (see [`git_env`]); never stored, never logged.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::SystemTime;

use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_types::ThreadId;

use super::endpoint::Outbound;
use super::github_tokens::{GithubTokens, git_env, git_env_of};

/// Where `git` and `gh` commands get a GitHub token: commands that run
/// them get one; other commands get nothing.
#[derive(Debug)]
pub(crate) enum GithubCommandEnv {
    /// The first installation the control plane lists for this runner.
    /// Tokens over the current connection; none while disconnected.
    ControlPlane(RwLock<Option<Arc<GithubTokens<Outbound>>>>),
    /// The token in a file.
    File(TokenFile),
}

impl GithubCommandEnv {
    /// Tokens from the control plane, once connected.
    pub(crate) fn control_plane() -> Self {
        GithubCommandEnv::ControlPlane(RwLock::new(None))
    }

    /// Fetches tokens over a new connection (the cache starts empty); a
    /// token file stays the source.
    pub(crate) fn connect(&self, client: AgentRunnerControlServiceClient<Outbound>) {
        if let GithubCommandEnv::ControlPlane(slot) = self {
            let tokens = Arc::new(GithubTokens::new(client));
            *slot.write().unwrap_or_else(|p| p.into_inner()) = Some(tokens);
        }
    }

    /// The variables for `command` of `thread`.
    pub(crate) async fn env_for(&self, thread: &ThreadId, command: &str) -> Vec<(String, String)> {
        if !runs_git(command) {
            return Vec::new();
        }
        let slot = match self {
            GithubCommandEnv::File(file) => {
                return file.token().map(|t| git_env_of(&t)).unwrap_or_default();
            }
            GithubCommandEnv::ControlPlane(slot) => slot,
        };
        let current = slot.read().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(tokens) = current else {
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

/// A token file, read again whenever it changes (its modification time,
/// size or inode), so a token rotated by whatever writes it is used from
/// the next command on.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<(Stamp, String)>>,
}

/// What says a file changed.
type Stamp = (Option<SystemTime>, u64, u64);

impl TokenFile {
    /// The token in `path` (its first line).
    pub(crate) fn new(path: PathBuf) -> Self {
        TokenFile {
            path,
            cached: Mutex::new(None),
        }
    }

    /// The file's token now; `None` (said in the log, without the token)
    /// when it cannot be read or is empty.
    fn token(&self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let warn = |why: &str| {
            tracing::warn!(path = %self.path.display(), "no GitHub token for a git command: {why}");
        };
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) => {
                warn(&e.to_string());
                return None;
            }
        };
        let stamp = (meta.modified().ok(), meta.len(), meta.ino());
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, token)) = cached.as_ref()
            && *seen == stamp
        {
            return Some(token.clone());
        }
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) => {
                warn(&e.to_string());
                return None;
            }
        };
        let token = text.lines().next().unwrap_or_default().trim().to_owned();
        if token.is_empty() {
            warn("the token file is empty");
            *cached = None;
            return None;
        }
        *cached = Some((stamp, token.clone()));
        Some(token)
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
