//! The engine's [`CommandEnvSource`] for a runner: what one command of a
//! thread gets in its environment as it starts, and nothing else does: the
//! thread's CLI secret (0.7.0, [`CLI_SECRET_ENV`]) for every command of
//! that thread, and a GitHub token for commands that run `git` or `gh`.
//! Neither is recorded: not in the command's item, not in the log.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use gantry_core::CommandEnvSource;
use gantry_types::ThreadId;

use super::github_env::{GithubCommandEnv, TokenFile};
use super::thread_secrets::{CLI_SECRET_ENV, ThreadSecrets};

/// A runner's command environment; give the same one to the engine
/// ([`gantry_core::EngineBuilder::command_env_source`]) and to the runner
/// ([`crate::RunnerOptions::command_env`]).
#[derive(Debug)]
pub struct RunnerCommandEnv {
    pub(crate) secrets: ThreadSecrets,
    pub(crate) github: Option<GithubCommandEnv>,
}

impl RunnerCommandEnv {
    /// Threads' secrets kept in `secrets_dir` (in memory only without
    /// one); no GitHub token for `git` until a source is chosen.
    pub fn new(secrets_dir: Option<PathBuf>) -> Self {
        RunnerCommandEnv {
            secrets: ThreadSecrets::new(secrets_dir),
            github: None,
        }
    }

    /// GitHub tokens from the control plane over 0.2.0's GitHub rpcs (a
    /// 0.7.0 control plane has none: commands then get no token).
    pub fn github_from_control_plane(mut self) -> Self {
        self.github = Some(GithubCommandEnv::control_plane());
        self
    }

    /// The GitHub token in `file` (its first line), read again whenever the
    /// file changes; in either protocol version, instead of the control
    /// plane's.
    pub fn github_token_file(mut self, file: PathBuf) -> Self {
        self.github = Some(GithubCommandEnv::File(TokenFile::new(file)));
        self
    }

    /// Shared by the engine and the runner.
    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }
}

#[async_trait]
impl CommandEnvSource for RunnerCommandEnv {
    async fn env_for(&self, thread: &ThreadId, command: &str) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if let Some(secret) = self.secrets.get(thread) {
            env.push((CLI_SECRET_ENV.to_owned(), secret));
        }
        if let Some(github) = &self.github {
            env.extend(github.env_for(thread, command).await);
        }
        env
    }
}
