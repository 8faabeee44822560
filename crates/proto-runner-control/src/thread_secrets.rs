//! Each 0.7.0 thread's `cli_secret`, handed to the thread's commands as
//! [`CLI_SECRET_ENV`] and to nothing else: not the engine's store, not an
//! event, not a log line, not the model's instructions. Kept in memory and,
//! when the runner has a directory for them, in one file per thread (mode
//! 0600), so a restarted runner still has them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use gantry_types::ThreadId;

/// The variable a thread's commands find its secret in. CompanyHelm's
/// runner sets none: it writes the secret into the model's instructions
/// (its system prompt's `agent_token`, for `Authorization: Bearer`), which
/// Gantry would keep in the thread's event log; this name follows that
/// template's.
pub const CLI_SECRET_ENV: &str = "COMPANYHELM_AGENT_TOKEN";

/// The threads' secrets.
pub(crate) struct ThreadSecrets {
    dir: Option<PathBuf>,
    known: Mutex<HashMap<ThreadId, String>>,
}

impl std::fmt::Debug for ThreadSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets: where they are kept, not what they are.
        f.debug_struct("ThreadSecrets")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ThreadSecrets {
    /// Secrets kept in `dir` (created when first needed, mode 0700), or in
    /// memory only.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        ThreadSecrets {
            dir,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `thread`'s secret.
    pub(crate) fn set(&self, thread: &ThreadId, secret: &str) -> std::io::Result<()> {
        if let Some(path) = self.file(thread) {
            write_private(&path, secret)?;
        }
        self.lock().insert(thread.clone(), secret.to_owned());
        Ok(())
    }

    /// Forgets `thread`'s secret.
    pub(crate) fn remove(&self, thread: &ThreadId) {
        self.lock().remove(thread);
        if let Some(path) = self.file(thread) {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot delete a thread's secret")
                }
            }
        }
    }

    /// `thread`'s secret, if it has one.
    pub(crate) fn get(&self, thread: &ThreadId) -> Option<String> {
        if let Some(secret) = self.lock().get(thread) {
            return Some(secret.clone());
        }
        let path = self.file(thread)?;
        let secret = std::fs::read_to_string(&path).ok()?;
        self.lock().insert(thread.clone(), secret.clone());
        Some(secret)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ThreadId, String>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The thread's file: its id in hex, so no id names another path.
    fn file(&self, thread: &ThreadId) -> Option<PathBuf> {
        let name: String = thread
            .as_str()
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(self.dir.as_ref()?.join(name))
    }
}

/// Writes `secret` to `path`, readable by this user only, through a
/// temporary file renamed in place.
fn write_private(path: &std::path::Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(secret.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_outlives_the_runner_in_a_private_file_and_goes_with_its_thread() {
        let dir = tempfile::tempdir().unwrap();
        let thread = ThreadId::from("../t:1");
        let secrets = ThreadSecrets::new(Some(dir.path().join("secrets")));
        secrets.set(&thread, "s3cret").unwrap();
        // A new runner reads it back; the file is in the directory, private.
        let again = ThreadSecrets::new(Some(dir.path().join("secrets")));
        assert_eq!(again.get(&thread).as_deref(), Some("s3cret"));
        let files: Vec<_> = std::fs::read_dir(dir.path().join("secrets"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        again.remove(&thread);
        assert_eq!(again.get(&thread), None);
        assert_eq!(
            ThreadSecrets::new(Some(dir.path().join("secrets"))).get(&thread),
            None
        );
        assert!(!format!("{again:?}").contains("s3cret"));
    }
}
