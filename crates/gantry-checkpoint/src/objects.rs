//! A checkpoint's commit and the refs naming it, written by the store
//! itself rather than by two more `git` processes a checkpoint: a loose
//! object (zlib of `commit <size>\0<body>`, named by its SHA-1) and a loose
//! ref (a file holding an id) are formats every git reads, and the store is
//! a SHA-1 repository with files refs, as `git init` made it.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use sha1::{Digest, Sha1};

use crate::CheckpointError;

/// Names each temporary file apart from concurrent ones of this process.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// The author and committer of every checkpoint, as `git::isolated` names
/// them for git.
const IDENT: &str = "gantry <gantry@localhost>";

/// Writes the commit of `tree` (after `parent`) described by `message`, as
/// `git commit-tree` would, and returns its id; `None` when `tree` is not a
/// SHA-1 id (a store git made otherwise: `git commit-tree` is asked then).
pub(crate) fn write_commit(
    git_dir: &Path,
    tree: &str,
    parent: Option<&str>,
    message: &str,
) -> Result<Option<String>, CheckpointError> {
    let sha1_hex = |id: &str| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !sha1_hex(tree) || parent.is_some_and(|p| !sha1_hex(p)) {
        return Ok(None);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut body = format!("tree {tree}\n");
    if let Some(parent) = parent {
        body.push_str(&format!("parent {parent}\n"));
    }
    body.push_str(&format!(
        "author {IDENT} {now} +0000\ncommitter {IDENT} {now} +0000\n\n{message}\n"
    ));
    let mut object = format!("commit {}\0", body.len()).into_bytes();
    object.extend_from_slice(body.as_bytes());
    let id = hex(&Sha1::digest(&object));
    let dir = git_dir.join("objects").join(&id[..2]);
    let path = dir.join(&id[2..]);
    if path.is_file() {
        return Ok(Some(id));
    }
    let io = |source| CheckpointError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let mut zipped = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zipped.write_all(&object).map_err(io)?;
    let zipped = zipped.finish().map_err(io)?;
    let tmp = dir.join(format!(
        "tmp_obj_gantry_{}_{}",
        std::process::id(),
        TEMPORARY.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, &zipped).map_err(io)?;
    // Read-only, as git leaves its objects.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o444)).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(Some(id))
}

/// Points the ref `name` (`refs/...`) at `id`: written beside it under git's
/// own lock name, then renamed over it, so a reader sees the old id or the
/// new one. A lock left by a crash is the store's own (its calls never
/// overlap) and is taken over.
pub(crate) fn write_ref(git_dir: &Path, name: &str, id: &str) -> Result<(), CheckpointError> {
    let path = git_dir.join(name);
    let lock = git_dir.join(format!("{name}.lock"));
    let io = |source| CheckpointError::Io {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
    };
    let mut file = match open() {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(&lock);
            open().map_err(io)?
        }
        Err(e) => return Err(io(e)),
    };
    file.write_all(format!("{id}\n").as_bytes()).map_err(io)?;
    drop(file);
    std::fs::rename(&lock, &path).map_err(io)
}

/// The id the loose ref `name` holds, if it is a loose ref holding an id
/// (else git is asked: it may be packed).
pub(crate) fn read_ref(git_dir: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(git_dir.join(name)).ok()?;
    let id = text.trim();
    let hex = id.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && matches!(id.len(), 40 | 64)).then(|| id.to_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
