//! Safe extraction of `.tar.gz` and `.zip` skill packages.
//!
//! Every entry must stay inside the target folder: absolute names and `..`
//! components are refused, and so is a symlink whose target is absolute or
//! contains `..`. With only downward symlinks, no chain of links can lead
//! out of the folder, whatever order the entries come in. Hard links and
//! special files (devices, fifos) are refused or skipped. Size and entry
//! count are capped against archive bombs.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use super::SkillError;

/// Bytes extracted at most from one package.
pub(crate) const MAX_EXTRACTED_BYTES: u64 = 256 * 1024 * 1024;
/// Entries extracted at most from one package.
pub(crate) const MAX_ENTRIES: usize = 20_000;

/// The kind of archive a name or URL ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArchiveKind {
    TarGz,
    Zip,
}

impl ArchiveKind {
    /// From a file name or URL path (case-insensitive).
    pub(crate) fn from_name(name: &str) -> Option<ArchiveKind> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
            Some(ArchiveKind::TarGz)
        } else if lower.ends_with(".zip") {
            Some(ArchiveKind::Zip)
        } else {
            None
        }
    }
}

/// Extracts `archive` into the (existing, empty) folder `dest`. `package`
/// names the package in errors (the URL, not the staging file).
pub(crate) fn extract(
    kind: ArchiveKind,
    package: &str,
    archive: &Path,
    dest: &Path,
) -> Result<(), SkillError> {
    match kind {
        ArchiveKind::TarGz => extract_tar_gz(package, archive, dest),
        ArchiveKind::Zip => extract_zip(package, archive, dest),
    }
}

/// Running totals against the caps.
struct Budget {
    bytes: u64,
    entries: usize,
}

impl Budget {
    fn entry(&mut self, name: &str) -> Result<(), SkillError> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(unsafe_entry(
                name,
                &format!("exceeds the limit of {MAX_ENTRIES} entries per package"),
            ));
        }
        Ok(())
    }

    /// Copies `reader` into a new file at `path`, counting bytes.
    fn write_file(
        &mut self,
        name: &str,
        reader: &mut dyn Read,
        path: &Path,
        mode: Option<u32>,
    ) -> Result<(), SkillError> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| SkillError::io(parent, &e))?;
        }
        let mut file = File::create(path).map_err(|e| SkillError::io(path, &e))?;
        let left = MAX_EXTRACTED_BYTES.saturating_sub(self.bytes);
        // One byte past the budget tells "exactly at the limit" from "over".
        let copied = io::copy(&mut reader.take(left + 1), &mut file).map_err(|e| {
            SkillError::UnsafeArchive {
                entry: name.to_string(),
                reason: format!("cannot be read: {e}"),
            }
        })?;
        if copied > left {
            return Err(unsafe_entry(
                name,
                &format!(
                    "makes the package larger than {} MiB unpacked",
                    MAX_EXTRACTED_BYTES / (1024 * 1024)
                ),
            ));
        }
        self.bytes += copied;
        file.flush().map_err(|e| SkillError::io(path, &e))?;
        set_mode(path, mode);
        Ok(())
    }
}

fn extract_tar_gz(package: &str, archive: &Path, dest: &Path) -> Result<(), SkillError> {
    let file = File::open(archive).map_err(|e| SkillError::io(archive, &e))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(file)));
    let corrupt = |e: io::Error| SkillError::NotASkill {
        package: package.to_string(),
        reason: format!("not a readable .tar.gz archive: {e}"),
    };
    let mut budget = Budget {
        bytes: 0,
        entries: 0,
    };
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        budget.entry(&name)?;
        let Some(rel) = safe_relative(&name)? else {
            continue; // "./" itself
        };
        let target = dest.join(&rel);
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                fs::create_dir_all(&target).map_err(|e| SkillError::io(&target, &e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mode = entry.header().mode().ok();
                budget.write_file(&name, &mut entry, &target, mode)?;
            }
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                make_symlink(&name, &link, &target)?;
            }
            tar::EntryType::Link => {
                return Err(unsafe_entry(
                    &name,
                    "is a hard link, which is not supported",
                ));
            }
            // Metadata records (pax, GNU long names) are folded in by the
            // tar crate; devices and fifos have no place in a skill.
            _ => {}
        }
    }
    Ok(())
}

fn extract_zip(package: &str, archive: &Path, dest: &Path) -> Result<(), SkillError> {
    let file = File::open(archive).map_err(|e| SkillError::io(archive, &e))?;
    let corrupt = |e: zip::result::ZipError| SkillError::NotASkill {
        package: package.to_string(),
        reason: format!("not a readable .zip archive: {e}"),
    };
    let mut zip = zip::ZipArchive::new(io::BufReader::new(file)).map_err(corrupt)?;
    let mut budget = Budget {
        bytes: 0,
        entries: 0,
    };
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(corrupt)?;
        let name = entry.name().map_err(corrupt)?.into_owned();
        budget.entry(&name)?;
        let Some(rel) = safe_relative(&name)? else {
            continue;
        };
        let target = dest.join(&rel);
        if entry.is_symlink() {
            let mut link = String::new();
            // A zip symlink's content is its target; a long one is not a
            // real link.
            (&mut entry)
                .take(4096)
                .read_to_string(&mut link)
                .map_err(|e| unsafe_entry(&name, &format!("is an unreadable symlink: {e}")))?;
            make_symlink(&name, &link, &target)?;
        } else if entry.is_dir() {
            fs::create_dir_all(&target).map_err(|e| SkillError::io(&target, &e))?;
        } else {
            let mode = entry.unix_mode();
            budget.write_file(&name, &mut entry, &target, mode)?;
        }
    }
    Ok(())
}

/// An archive entry name as a path under the target folder; `None` for the
/// folder itself (`./`). Backslashes count as separators, since zips made
/// on Windows use them.
pub(crate) fn safe_relative(name: &str) -> Result<Option<PathBuf>, SkillError> {
    let normalized = name.replace('\\', "/");
    if normalized.starts_with('/') || normalized.contains('\0') {
        return Err(unsafe_entry(name, "has an absolute path"));
    }
    let mut out = PathBuf::new();
    for comp in Path::new(&normalized).components() {
        match comp {
            Component::Normal(c) => {
                // `C:` on its own is a drive prefix on Windows.
                if c.to_string_lossy().contains(':') && out.as_os_str().is_empty() {
                    return Err(unsafe_entry(name, "has a drive-letter path"));
                }
                out.push(c);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(unsafe_entry(
                    name,
                    "contains `..`, which could escape the folder",
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_entry(name, "has an absolute path"));
            }
        }
    }
    Ok(if out.as_os_str().is_empty() {
        None
    } else {
        Some(out)
    })
}

/// Creates the symlink `target -> link` if `link` only points downwards.
fn make_symlink(name: &str, link: &str, target: &Path) -> Result<(), SkillError> {
    let link_path = Path::new(link);
    let downward = !link.is_empty()
        && link_path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !downward {
        return Err(unsafe_entry(
            name,
            &format!("is a symlink to `{link}`, which could point outside the package"),
        ));
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| SkillError::io(parent, &e))?;
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(link_path, target).map_err(|e| SkillError::io(target, &e))
    }
    #[cfg(not(unix))]
    {
        // Without unix symlinks the entry is left out rather than guessed at.
        let _ = target;
        Ok(())
    }
}

/// Keeps the executable bits of scripts; everything else gets the usual
/// file permissions.
fn set_mode(path: &Path, mode: Option<u32>) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let exec = mode.is_some_and(|m| m & 0o111 != 0);
        let perm = if exec { 0o755 } else { 0o644 };
        // Best effort: a file that cannot be chmodded is still usable.
        let _ = fs::set_permissions(path, fs::Permissions::from_mode(perm));
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
    }
}

fn unsafe_entry(name: &str, reason: &str) -> SkillError {
    SkillError::UnsafeArchive {
        entry: name.to_string(),
        reason: reason.to_string(),
    }
}
