//! Shell snapshots: the user's login profile runs once, not once per
//! command. The first command that needs one captures it (see `capture`)
//! into a file; every command then starts as a plain `bash -c` that sources
//! the file first (through `BASH_ENV`). A snapshot is taken again when a
//! profile file changes; when taking one fails, commands run as
//! `bash -lc` again and the first of them says why, once.
//!
//! A snapshot depends only on the login shell, the profile files, the
//! environment commands get (Gantry's minus its keys, plus the engine's
//! command variables) and the sandbox the profile runs in; threads that
//! share those share the file. It holds nothing of any thread's own, and no
//! secret-looking variable. The files live in the engine's data dir
//! (`shell-snapshots/`, mode 0600), which sandboxed commands cannot read,
//! except for the one file they source.
//!
//! The profile never runs with more rights than the commands it serves: for
//! sandboxed commands it runs sandboxed too, read-only, without network (a
//! profile the model could write, `~/.bashrc` in a workspace, runs with no
//! more rights than any sandboxed command; see [`profile_sandbox`]). Only
//! for unsandboxed commands does it run unsandboxed.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::capture::{self, Shell};
use crate::sandbox::{self, SandboxPolicy, child_env};

/// How a command's `bash` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// `bash -c`, sourcing this snapshot first.
    Snapshot(PathBuf),
    /// `bash -lc`: the profile runs for this command. `Some` says, for the
    /// first command only, why there is no snapshot.
    Login(Option<String>),
}

impl Launch {
    /// The arguments that make `bash` run `line`.
    pub fn args<'a>(&self, line: &'a str) -> [&'a str; 2] {
        match self {
            Launch::Snapshot(_) => ["-c", line],
            Launch::Login(_) => ["-lc", line],
        }
    }

    /// The variable that makes `bash` source the snapshot first, if any.
    pub fn env(&self) -> Option<(&'static str, &Path)> {
        match self {
            Launch::Snapshot(path) => Some(("BASH_ENV", path)),
            Launch::Login(_) => None,
        }
    }

    /// The snapshot file a sandboxed command must be able to read.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Launch::Snapshot(path) => Some(path),
            Launch::Login(_) => None,
        }
    }
}

/// The snapshots of one engine.
pub struct ShellSnapshots {
    dir: PathBuf,
    /// Holds `dir` when it is a private temp dir (no data dir).
    _temp: Option<tempfile::TempDir>,
    /// By login shell and environment; each entry knows the profile files'
    /// state it was taken from.
    entries: Mutex<HashMap<u64, Arc<Entry>>>,
}

struct Entry {
    stamp: u64,
    taken: OnceCell<Result<PathBuf, String>>,
    reported: AtomicBool,
}

impl std::fmt::Debug for ShellSnapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellSnapshots")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ShellSnapshots {
    /// Snapshots kept in `dir` (created, mode 0700; files left there by an
    /// earlier run are removed, since profiles may have changed meanwhile),
    /// or in a private temp dir removed on drop.
    pub fn new(dir: Option<&Path>) -> std::io::Result<Self> {
        let (dir, temp) = match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
                for entry in std::fs::read_dir(dir)?.flatten() {
                    if entry.path().extension().is_some_and(|e| e == "sh") {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
                (dir.to_path_buf(), None)
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("gantry-shell-snapshots-")
                    .tempdir()?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        Ok(Self {
            dir,
            _temp: temp,
            entries: Mutex::default(),
        })
    }

    /// How to start a command whose environment adds `explicit` to
    /// Gantry's: from the current snapshot, taken now if there is none yet
    /// or a profile file changed.
    ///
    /// The profile runs in a task of its own: a command interrupted while
    /// it waits does not kill the profile halfway (which can leave its lock
    /// files behind, as `pyenv rehash` does), and the next command finds the
    /// snapshot ready.
    /// `sandbox` is the commands' sandbox, which decides the profile's.
    pub async fn launch(
        self: &Arc<Self>,
        explicit: &BTreeMap<String, String>,
        sandbox: &SandboxPolicy,
    ) -> Launch {
        let (entry, taken) = self.current(explicit, sandbox).await;
        match taken {
            Ok(path) => Launch::Snapshot(path),
            Err(why) => {
                let first = !entry.reported.swap(true, Ordering::Relaxed);
                Launch::Login(first.then(|| {
                    format!(
                        "[note: Gantry could not snapshot your login profile ({why}); \
                         commands run with `bash -lc`, which runs the profile each time]"
                    )
                }))
            }
        }
    }

    /// Takes the snapshot [`launch`](Self::launch) would use, unless it is
    /// current, without starting a command: a turn that offers `shell`
    /// calls it beside its first model request, so that the profile's time
    /// is not spent between the model's first command and the command. A
    /// failure is still told by the first command that runs.
    pub async fn prepare(
        self: &Arc<Self>,
        explicit: &BTreeMap<String, String>,
        sandbox: &SandboxPolicy,
    ) {
        let _ = self.current(explicit, sandbox).await;
    }

    /// The entry for commands whose environment adds `explicit`, and its
    /// snapshot (taken first, in a task of its own, if needed) or why there
    /// is none.
    async fn current(
        self: &Arc<Self>,
        explicit: &BTreeMap<String, String>,
        sandbox: &SandboxPolicy,
    ) -> (Arc<Entry>, Result<PathBuf, String>) {
        let env = child_env::resolved(explicit.iter());
        let (shell, program) = Shell::of(&env);
        let confined = profile_sandbox(sandbox);
        let key = hash_of(&(shell, &program, &env, &confined));
        let home = env.get(std::ffi::OsStr::new("HOME")).map(PathBuf::from);
        let stamp = home.map_or(0, |home| stamp_of(&shell.profile_files(&home)));
        let entry = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let entry = entries.entry(key).or_insert_with(|| Entry::new(stamp));
            if entry.stamp != stamp {
                *entry = Entry::new(stamp);
            }
            entry.clone()
        };
        let taking = {
            let entry = entry.clone();
            let path = self.dir.join(format!("{key:016x}-{stamp:016x}.sh"));
            let home = self.dir.clone();
            tokio::spawn(async move {
                entry
                    .taken
                    .get_or_init(|| take(shell, program, env, confined, home, path))
                    .await
                    .clone()
            })
        };
        let taken = taking
            .await
            .unwrap_or_else(|e| Err(format!("taking it failed: {e}")));
        (entry, taken)
    }
}

/// The sandbox a profile runs in for commands confined by `commands`:
/// `None` (unsandboxed) only for unsandboxed commands; otherwise read-only,
/// without network, with the same paths kept from it. It names no thread's
/// workspace or temp dir, so every sandboxed thread of an engine shares it,
/// and the profile runs once for all of them.
pub fn profile_sandbox(commands: &SandboxPolicy) -> Option<SandboxPolicy> {
    commands.is_sandboxed().then(|| SandboxPolicy {
        mode: gantry_types::SandboxMode::ReadOnly,
        writable_roots: Vec::new(),
        readable_denied: commands.readable_denied.clone(),
        protected: commands.protected.clone(),
        protected_readable: commands.protected_readable.clone(),
        network: false,
        private_tmp: None,
        keep_visible: Vec::new(),
    })
}

/// Captures the profile into `path`, in `confined` if given (`dir`, the
/// snapshots' own dir, stands for its workspace: the profile needs none).
async fn take(
    shell: Shell,
    program: PathBuf,
    env: BTreeMap<OsString, OsString>,
    confined: Option<SandboxPolicy>,
    dir: PathBuf,
    path: PathBuf,
) -> Result<PathBuf, String> {
    let jail = match confined {
        Some(policy) => {
            let prepared = tokio::task::spawn_blocking(move || sandbox::prepare(&policy, &dir))
                .await
                .map_err(|e| format!("its sandbox could not be set up: {e}"))?;
            prepared.map_err(|e| format!("its sandbox could not be set up: {e}"))?
        }
        None => None,
    };
    let text = capture::capture(shell, &program, &env, jail.as_ref()).await?;
    write_private(&path, &text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    check_sources_cleanly(&path, &env, jail.as_ref()).await?;
    tracing::debug!(path = %path.display(), bytes = text.len(), "shell snapshot taken");
    Ok(path)
}

impl Entry {
    fn new(stamp: u64) -> Arc<Self> {
        Arc::new(Self {
            stamp,
            taken: OnceCell::new(),
            reported: AtomicBool::new(false),
        })
    }
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The profile files' state: a change of any (edited, added, removed)
/// changes the stamp.
fn stamp_of(files: &[PathBuf]) -> u64 {
    let mut h = DefaultHasher::new();
    for file in files {
        file.hash(&mut h);
        if let Ok(meta) = std::fs::metadata(file) {
            (meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec()).hash(&mut h);
        }
    }
    h.finish()
}

/// Writes `text` to `path` through a temp file (mode 0600) and a rename, so
/// a command never sources half a snapshot. Not fsynced: a snapshot never
/// outlives the process (each start removes the files left behind), so a
/// crash cannot leave one that is read again, and a first command need not
/// wait for the disk.
fn write_private(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".snapshot-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    temp.write_all(text)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Sources the snapshot once in a bare `bash -c :`, in the profile's
/// sandbox: one that prints errors would print them into every command's
/// output, so it is not used.
async fn check_sources_cleanly(
    path: &Path,
    env: &BTreeMap<OsString, OsString>,
    jail: Option<&sandbox::PreparedSandbox>,
) -> Result<(), String> {
    let mut env = env.clone();
    env.insert("BASH_ENV".into(), path.into());
    let ran = super::run_to_end(
        std::ffi::OsStr::new("bash"),
        &["-c", ":"],
        env,
        Path::new("/"),
        jail,
        capture::CAPTURE_TIMEOUT,
    )
    .await;
    match ran {
        Ok(Some(out)) if out.status.success() && out.stderr.is_empty() && out.stdout.is_empty() => {
            Ok(())
        }
        Ok(Some(out)) => {
            let said = String::from_utf8_lossy(&out.stderr);
            let line = said.lines().next().unwrap_or("output on stdout");
            Err(format!(
                "its snapshot does not source cleanly: {}",
                line.chars().take(200).collect::<String>()
            ))
        }
        Ok(None) => Err("sourcing its snapshot hung".to_owned()),
        Err(e) => Err(format!("could not start bash: {e}")),
    }
}
