//! Each thread's private temp dir, which its sandboxed commands see at
//! `/tmp` where they have namespaces of their own (see `namespaces.rs`).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The threads' private temp dirs, one engine's: `<data dir>/tmp/<thread>`,
/// or under a temp dir of the engine's own (removed on drop) without a data
/// dir. Like `/tmp` after a reboot, they are emptied when the engine
/// starts.
#[derive(Debug)]
pub struct PrivateTemps {
    base: PathBuf,
    /// Holds `base` when it is a private temp dir (no data dir).
    _temp: Option<tempfile::TempDir>,
}

impl PrivateTemps {
    /// The dirs under `data_dir`'s `tmp/` (emptied, mode 0700), or under a
    /// new private temp dir.
    pub fn new(data_dir: Option<&Path>) -> io::Result<Self> {
        match data_dir {
            Some(dir) => {
                let base = dir.join("tmp");
                // Never follows a link at `base`: std removes the link itself.
                match std::fs::remove_dir_all(&base) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&base)?;
                std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700))?;
                Ok(Self { base, _temp: None })
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("gantry-private-tmp-")
                    .tempdir()?;
                Ok(Self {
                    base: temp.path().to_path_buf(),
                    _temp: Some(temp),
                })
            }
        }
    }

    /// Thread `thread`'s dir (made by the sandbox when a command first
    /// needs it). An id that is not a plain file name (a client may choose
    /// ids) is named by its hash instead.
    pub fn for_thread(&self, thread: &str) -> PathBuf {
        let plain = !thread.is_empty()
            && thread.len() <= 128
            && thread
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !thread.starts_with('-');
        if plain {
            return self.base.join(thread);
        }
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        thread.hash(&mut h);
        self.base.join(format!("h{:016x}", h.finish()))
    }

    /// Removes thread `thread`'s dir, if any (the thread was deleted).
    pub fn remove(&self, thread: &str) -> io::Result<()> {
        match std::fs::remove_dir_all(self.for_thread(thread)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}
