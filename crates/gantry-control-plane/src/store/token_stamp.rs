//! The HTTP API's tokens kept in memory, read again only when they may
//! have changed: every request checks its token, and tokens are made and
//! revoked by another process (`gantry control-plane create-token`), so
//! without this each request would cost a store query.
//!
//! On SQLite, every change to the tokens replaces a small file beside the
//! database (a new file renamed over the old one), and the kept tokens are
//! used only while that file is the one they were read under: one `stat`
//! per request, and a change counts from the next request on, in any
//! process on this machine. Without that file (PostgreSQL, whose other
//! writers may be on other machines, or a file that could not be written)
//! nothing is kept and every check reads the store.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use super::StoreError;
use super::records::ApiTokenRecord;

/// Which file the tokens were read under: a replaced file differs in
/// inode, modification time or length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    inode: u64,
    modified: SystemTime,
    len: u64,
}

/// The tokens last read, and the stamp they were read under.
#[derive(Debug, Default)]
pub(super) struct TokenCache {
    /// The file every change replaces; `None`: keep nothing.
    marker: Option<PathBuf>,
    kept: Mutex<Option<(Stamp, Vec<ApiTokenRecord>)>>,
}

impl TokenCache {
    /// A cache that keeps nothing: every check reads the store.
    pub(super) fn none() -> Self {
        Self::default()
    }

    /// A cache for the SQLite database at `database`, whose marker is
    /// `<database>-tokens` (made now if missing, so this process can keep
    /// tokens from its first read).
    pub(super) fn beside(database: &Path) -> Self {
        let mut name = database.as_os_str().to_owned();
        name.push("-tokens");
        let cache = Self {
            marker: Some(PathBuf::from(name)),
            kept: Mutex::default(),
        };
        if cache.stamp().is_none()
            && let Err(e) = cache.replace()
        {
            tracing::warn!(error = %e, "cannot write the API tokens' change marker; every request reads the tokens");
        }
        cache
    }

    /// The marker's stamp now, if there is one.
    pub(super) fn stamp(&self) -> Option<Stamp> {
        let metadata = std::fs::metadata(self.marker.as_ref()?).ok()?;
        Some(Stamp {
            inode: std::os::unix::fs::MetadataExt::ino(&metadata),
            modified: metadata.modified().ok()?,
            len: metadata.len(),
        })
    }

    /// The tokens kept, if they were read under `stamp`.
    pub(super) fn kept(&self, stamp: Option<Stamp>) -> Option<Vec<ApiTokenRecord>> {
        let stamp = stamp?;
        match &*self.lock() {
            Some((kept_under, tokens)) if *kept_under == stamp => Some(tokens.clone()),
            _ => None,
        }
    }

    /// Keeps `tokens`, read after `stamp` was taken (so a change made
    /// meanwhile shows as another stamp at the next check).
    pub(super) fn keep(&self, stamp: Option<Stamp>, tokens: &[ApiTokenRecord]) {
        if let Some(stamp) = stamp {
            *self.lock() = Some((stamp, tokens.to_vec()));
        }
    }

    /// Says the tokens changed (after the change is committed): every
    /// process keeping them reads them again at its next check.
    pub(super) fn changed(&self) -> Result<(), StoreError> {
        *self.lock() = None;
        let Some(marker) = &self.marker else {
            return Ok(());
        };
        let Err(e) = self.replace() else {
            return Ok(());
        };
        // Without the marker, every process reads the store each time.
        match std::fs::remove_file(marker) {
            Ok(()) => Ok(()),
            Err(gone) if gone.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(_) => Err(StoreError::Database(format!(
                "the API tokens changed, but a running control plane may not notice until it \
                 restarts: cannot replace {}: {e}",
                marker.display()
            ))),
        }
    }

    /// Writes a new marker file and renames it over the old one.
    fn replace(&self) -> std::io::Result<()> {
        let Some(marker) = &self.marker else {
            return Ok(());
        };
        let mut name = marker.as_os_str().to_owned();
        name.push(format!(".{}", std::process::id()));
        let fresh = PathBuf::from(name);
        let mut file = std::fs::File::create(&fresh)?;
        // The content only makes the file differ; nothing reads it.
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        writeln!(file, "API tokens changed at {now} ns")?;
        drop(file);
        std::fs::rename(&fresh, marker)
    }

    fn lock(&self) -> MutexGuard<'_, Option<(Stamp, Vec<ApiTokenRecord>)>> {
        // Every change under the lock is one assignment: still whole.
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str) -> ApiTokenRecord {
        ApiTokenRecord {
            id: name.into(),
            name: name.into(),
            token_hash: "00".repeat(32),
            created_at: 0,
            read_only: false,
        }
    }

    #[test]
    fn tokens_are_kept_until_any_process_changes_them() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("control-plane.db");
        let server = TokenCache::beside(&database);
        let cli = TokenCache::beside(&database);

        let stamp = server.stamp();
        assert!(stamp.is_some(), "the marker is made when missing");
        server.keep(stamp, &[token("alice")]);
        assert_eq!(server.kept(server.stamp()), Some(vec![token("alice")]));

        // Another process revokes: the next check reads the store.
        cli.changed().unwrap();
        assert_eq!(server.kept(server.stamp()), None);
    }

    #[test]
    fn without_a_marker_nothing_is_kept() {
        let cache = TokenCache::none();
        cache.keep(cache.stamp(), &[token("alice")]);
        assert_eq!(cache.kept(cache.stamp()), None);

        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("control-plane.db");
        let cache = TokenCache::beside(&database);
        std::fs::remove_file(dir.path().join("control-plane.db-tokens")).unwrap();
        cache.keep(cache.stamp(), &[token("alice")]);
        assert_eq!(cache.kept(cache.stamp()), None);
    }
}
