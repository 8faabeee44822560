//! The note a restore leaves in its store while it runs: which checkpoint,
//! which workspace. Written (and synced) before the first file is touched,
//! removed after the last, so a crash in between is found and finished.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{CheckpointError, CheckpointId};

const FILE: &str = "gantry-restore-pending";

/// Records that a restore of `workspace` to `id` starts.
pub(crate) fn begin(
    store: &Path,
    id: &CheckpointId,
    workspace: &Path,
) -> Result<(), CheckpointError> {
    let path = store.join(FILE);
    let tmp = store.join(format!("{FILE}.tmp"));
    let io = |source| CheckpointError::Io {
        path: path.clone(),
        source,
    };
    let mut body = format!("{id}\n").into_bytes();
    body.extend_from_slice(workspace.as_os_str().as_bytes());
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(&body).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    // The rename is durable once the directory is.
    std::fs::File::open(store)
        .and_then(|dir| dir.sync_all())
        .map_err(io)
}

/// Records that the restore finished.
pub(crate) fn end(store: &Path) -> Result<(), CheckpointError> {
    let path = store.join(FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(CheckpointError::Io { path, source }),
    }
}

/// The restore left unfinished in `store`, if any.
pub(crate) fn read(store: &Path) -> Result<Option<(CheckpointId, PathBuf)>, CheckpointError> {
    let path = store.join(FILE);
    let body = match std::fs::read(&path) {
        Ok(body) => body,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CheckpointError::Io { path, source }),
    };
    let (id, workspace) = match body.iter().position(|b| *b == b'\n') {
        Some(at) => (&body[..at], &body[at + 1..]),
        None => (&body[..], &[][..]),
    };
    let id = std::str::from_utf8(id).ok().and_then(CheckpointId::parse);
    match id {
        Some(id) if !workspace.is_empty() => Ok(Some((
            id,
            PathBuf::from(std::ffi::OsStr::from_bytes(workspace)),
        ))),
        // Not one this store wrote whole (the rename makes that unlikely):
        // nothing to finish.
        _ => Ok(None),
    }
}
