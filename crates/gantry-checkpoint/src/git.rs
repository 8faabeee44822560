//! One `git` command against the private store, isolated from the caller's
//! environment and configuration.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::CheckpointError;

/// How every command of one store runs: its git dir, work tree and index.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    pub(crate) git_dir: PathBuf,
    pub(crate) work_tree: PathBuf,
    pub(crate) index: PathBuf,
    /// The user's `core.excludesFile`, read once from their own config,
    /// since the store reads no global config of theirs.
    pub(crate) excludes_file: Option<PathBuf>,
}

impl Git {
    /// Runs `git args`, returning its standard output.
    pub(crate) fn run<I, S>(&self, args: I) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_with(args, None)
    }

    /// Runs `git args` with `input` on its standard input.
    pub(crate) fn run_with<I, S>(
        &self,
        args: I,
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut command = isolated();
        // The index is the store's own and rewritten on every checkpoint:
        // no checksum over its whole length each time. (Never for the
        // user's repository, whose own git may be older. Index version 4,
        // smaller, costs more to read than it saves writing.)
        command.args(["-c", "index.skipHash=true"]);
        command
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", &self.index)
            .current_dir(&self.work_tree);
        if let Some(file) = &self.excludes_file {
            command
                .arg("-c")
                .arg(format!("core.excludesFile={}", file.display()));
        }
        command.args(&args);
        command.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().map_err(CheckpointError::GitMissing)?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            // A git that exits early closes its stdin; its status says why.
            let _ = stdin.write_all(bytes);
        }
        let output = child
            .wait_with_output()
            .map_err(CheckpointError::GitMissing)?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(CheckpointError::Git {
                args: args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            })
        }
    }

    /// Runs `git args` and returns its output as one trimmed line.
    pub(crate) fn line<I, S>(&self, args: I) -> Result<String, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run(args)?;
        Ok(String::from_utf8_lossy(&out).trim().to_owned())
    }
}

/// A `git` with none of the caller's environment (no `GIT_*` variable, no
/// key the daemon holds) but its `PATH`, no system or global config, no
/// hooks, no automatic gc and no prompt: the store behaves the same whoever
/// runs it, and never runs code from the workspace.
pub(crate) fn isolated() -> Command {
    let mut command = Command::new("git");
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "gantry")
        .env("GIT_AUTHOR_EMAIL", "gantry@localhost")
        .env("GIT_COMMITTER_NAME", "gantry")
        .env("GIT_COMMITTER_EMAIL", "gantry@localhost");
    for option in [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.autocrlf=false",
        "core.symlinks=true",
        "core.fileMode=true",
        "core.quotePath=false",
        "gc.auto=0",
        "advice.addEmbeddedRepo=false",
        "safe.directory=*",
    ] {
        command.arg("-c").arg(option);
    }
    command
}

/// The user's own `core.excludesFile`, as their global config names it.
pub(crate) fn user_excludes_file() -> Option<PathBuf> {
    let mut command = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(key);
        }
    }
    let output = command
        .args(["config", "--global", "--path", "--get", "core.excludesFile"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// `bytes` split at NULs, as `-z` output is, without the empty tail.
pub(crate) fn nul_split(bytes: &[u8]) -> impl Iterator<Item = &Path> {
    use std::os::unix::ffi::OsStrExt;
    bytes
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| Path::new(OsStr::from_bytes(p)))
}
