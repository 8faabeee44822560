//! Installing skill packages into an agent's skills directory, and deleting
//! installed skills.
//!
//! A package coordinate is one of:
//! - a local path: a skill folder, a folder of skills, or a local
//!   `.tar.gz`/`.tgz`/`.zip` file;
//! - an `http(s)://` URL ending in `.tar.gz`, `.tgz` or `.zip`;
//! - a git URL (`https://...`, `ssh://`, `git://`, `file://`,
//!   `git@host:path`, or any URL prefixed `git+`), cloned with
//!   `git clone --depth 1`.
//!
//! The package is fetched into a hidden staging folder inside the skills
//! directory, every `SKILL.md` in it must parse, and only then each skill
//! is moved to `<skills_dir>/<name>`, replacing an older install of it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Once;
use std::time::Duration;

use super::archive::{self, ArchiveKind, MAX_ENTRIES, MAX_EXTRACTED_BYTES};
use super::skill::check_name;
use super::{Skill, SkillError, SkillSource};

/// Largest package download accepted.
const MAX_DOWNLOAD_BYTES: u64 = 100 * 1024 * 1024;
/// How long a download or a clone may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);
/// How deep below the package root `SKILL.md` files are looked for
/// (`repo/skills/<name>/SKILL.md` is depth 2; archives add a top folder).
const MAX_SEARCH_DEPTH: usize = 4;

pub use gantry_types::skill::{SkillPackageStatus, SkillPackageUpdate};

/// A classified package coordinate.
#[derive(Debug)]
enum Coordinate {
    LocalDir(PathBuf),
    LocalArchive(PathBuf, ArchiveKind),
    ArchiveUrl(String, ArchiveKind),
    Git(String),
}

/// Installs the skills of the package at `package` into `skills_dir`
/// (created if missing) and returns their names, sorted. Nothing lands
/// unless every skill in the package parses. An installed skill of the
/// same name is replaced.
pub async fn install(package: &str, skills_dir: &Path) -> Result<Vec<String>, SkillError> {
    let coordinate = classify(package)?;
    fs::create_dir_all(skills_dir).map_err(|e| SkillError::io(skills_dir, &e))?;
    // Staging inside the skills directory keeps the final move a rename on
    // one filesystem; the leading dot hides it from discovery.
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(skills_dir)
        .map_err(|e| SkillError::io(skills_dir, &e))?;
    let stage = staging.path().to_path_buf();

    let (root, archive) = match coordinate {
        Coordinate::LocalDir(dir) => (dir, None),
        Coordinate::LocalArchive(file, kind) => (stage.join("package"), Some((file, kind))),
        Coordinate::ArchiveUrl(url, kind) => {
            let file = stage.join(if kind == ArchiveKind::Zip {
                "download.zip"
            } else {
                "download.tar.gz"
            });
            download(&url, &file).await?;
            (stage.join("package"), Some((file, kind)))
        }
        Coordinate::Git(url) => {
            let dest = stage.join("package");
            git_clone(&url, &dest).await?;
            (dest, None)
        }
    };

    let package = package.to_string();
    let skills_dir = skills_dir.to_path_buf();
    let result = tokio::task::spawn_blocking(move || {
        if let Some((file, kind)) = archive {
            fs::create_dir_all(&root).map_err(|e| SkillError::io(&root, &e))?;
            archive::extract(kind, &package, &file, &root)?;
        }
        land(&package, &root, &stage, &skills_dir)
    })
    .await
    .map_err(|e| SkillError::Io {
        path: "skill install".to_string(),
        message: format!("internal error: install task failed: {e}"),
    });
    // Dropping `staging` removes what is left of it (downloads, replaced
    // installs) whatever happened.
    drop(staging);
    result?
}

/// Removes the installed skill `name` from `skills_dir`.
pub async fn delete(name: &str, skills_dir: &Path) -> Result<(), SkillError> {
    let not_installed = || SkillError::NotInstalled {
        name: name.to_string(),
        dir: skills_dir.display().to_string(),
    };
    // A name is never a path: this is what keeps `../x` from deleting
    // anything outside the skills directory.
    if check_name(name).is_err() {
        return Err(not_installed());
    }
    let dir = skills_dir.join(name);
    let meta = tokio::fs::symlink_metadata(&dir)
        .await
        .map_err(|_| not_installed())?;
    if meta.file_type().is_symlink() {
        // A linked skill: remove the link, never what it points to.
        return tokio::fs::remove_file(&dir)
            .await
            .map_err(|e| SkillError::io(&dir, &e));
    }
    if !meta.is_dir() || !dir.join("SKILL.md").is_file() {
        return Err(not_installed());
    }
    tokio::fs::remove_dir_all(&dir)
        .await
        .map_err(|e| SkillError::io(&dir, &e))
}

fn classify(package: &str) -> Result<Coordinate, SkillError> {
    let unresolvable = |reason: &str| SkillError::Unresolvable {
        package: package.to_string(),
        reason: reason.to_string(),
    };
    let p = package.trim();
    if p.is_empty() {
        return Err(unresolvable("the coordinate is empty"));
    }
    if let Some(url) = p.strip_prefix("git+") {
        return Ok(Coordinate::Git(url.to_string()));
    }
    let lower = p.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        // The archive kind is in the URL's path, not its query string.
        let path = p.split(['?', '#']).next().unwrap_or(p);
        return Ok(match ArchiveKind::from_name(path) {
            Some(kind) => Coordinate::ArchiveUrl(p.to_string(), kind),
            // Repository pages (`https://host/org/repo`) are git remotes.
            None => Coordinate::Git(p.to_string()),
        });
    }
    if ["ssh://", "git://", "file://"]
        .iter()
        .any(|s| lower.starts_with(s))
    {
        return Ok(Coordinate::Git(p.to_string()));
    }
    if let Some((scheme, _)) = p.split_once("://") {
        return Err(unresolvable(&format!(
            "unsupported scheme `{scheme}://`; use a local path, an http(s) URL of a .tar.gz, \
             .tgz or .zip archive, or a git URL"
        )));
    }
    if is_scp_like(p) {
        return Ok(Coordinate::Git(p.to_string()));
    }
    let path = PathBuf::from(p);
    match fs::metadata(&path) {
        Ok(m) if m.is_dir() => Ok(Coordinate::LocalDir(path)),
        Ok(m) if m.is_file() => match ArchiveKind::from_name(p) {
            Some(kind) => Ok(Coordinate::LocalArchive(path, kind)),
            None => Err(unresolvable(
                "it is a file but not a .tar.gz, .tgz or .zip archive",
            )),
        },
        _ => Err(unresolvable(
            "not an existing local path, an http(s) URL of a .tar.gz, .tgz or .zip archive, \
             or a git URL",
        )),
    }
}

/// `git@github.com:org/repo.git`: a user, a host, a colon before any slash.
fn is_scp_like(s: &str) -> bool {
    match (s.find('@'), s.find(':'), s.find('/')) {
        (Some(at), Some(colon), slash) => at < colon && slash.is_none_or(|sl| colon < sl),
        _ => false,
    }
}

/// rustls needs one process-wide crypto provider; ring is the one compiled
/// in (as in gantry-llm).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

async fn download(url: &str, dest: &Path) -> Result<(), SkillError> {
    use tokio::io::AsyncWriteExt;

    let fail = |message: String| SkillError::Download {
        url: url.to_string(),
        message,
    };
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .user_agent(concat!("gantry/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| fail(format!("cannot build HTTP client: {}", error_chain(&e))))?;
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| fail(error_chain(&e)))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(fail(format!("HTTP {status}")));
    }
    let too_big = || {
        fail(format!(
            "larger than the {} MiB limit",
            MAX_DOWNLOAD_BYTES / (1024 * 1024)
        ))
    };
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_DOWNLOAD_BYTES)
    {
        return Err(too_big());
    }
    let mut file = tokio::fs::File::create(dest)
        .await
        .map_err(|e| SkillError::io(dest, &e))?;
    let mut total: u64 = 0;
    while let Some(chunk) = resp.chunk().await.map_err(|e| fail(error_chain(&e)))? {
        total += chunk.len() as u64;
        if total > MAX_DOWNLOAD_BYTES {
            return Err(too_big());
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| SkillError::io(dest, &e))?;
    }
    file.flush().await.map_err(|e| SkillError::io(dest, &e))
}

/// reqwest's top-level message hides the cause ("error sending request");
/// the chain names it (connection refused, DNS, TLS).
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

async fn git_clone(url: &str, dest: &Path) -> Result<(), SkillError> {
    let fail = |message: String| SkillError::Git {
        url: url.to_string(),
        message,
    };
    let child = tokio::process::Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--"])
        .arg(url)
        .arg(dest)
        // Never wait for a password prompt nobody will answer.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                fail("the `git` program is not installed".to_string())
            } else {
                fail(format!("cannot run git: {e}"))
            }
        })?;
    let out = tokio::time::timeout(FETCH_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| fail(format!("timed out after {}s", FETCH_TIMEOUT.as_secs())))?
        .map_err(|e| fail(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The first `fatal:` line says what went wrong; the lines after it
        // are generic advice ("Please make sure you have the correct access
        // rights...").
        let lines: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let line = lines
            .iter()
            .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .or(lines.last())
            .copied()
            .unwrap_or("git exited with an error");
        return Err(fail(line.to_string()));
    }
    Ok(())
}

/// Validates the skills under `root` and moves them into `skills_dir`.
fn land(
    package: &str,
    root: &Path,
    stage: &Path,
    skills_dir: &Path,
) -> Result<Vec<String>, SkillError> {
    let not_a_skill = |reason: String| SkillError::NotASkill {
        package: package.to_string(),
        reason,
    };
    let mut dirs = Vec::new();
    find_skill_dirs(root, 0, &mut dirs);
    if dirs.is_empty() {
        return Err(not_a_skill(format!(
            "no SKILL.md found in it (looked up to {MAX_SEARCH_DEPTH} folders deep)"
        )));
    }
    let mut skills: Vec<Skill> = Vec::new();
    for dir in &dirs {
        let skill = Skill::from_dir(dir, SkillSource::Installed)?;
        if let Some(other) = skills.iter().find(|s| s.name == skill.name) {
            return Err(not_a_skill(format!(
                "two skills are named `{}` ({} and {})",
                skill.name,
                other.dir.as_deref().unwrap_or(Path::new("")).display(),
                dir.display()
            )));
        }
        skills.push(skill);
    }

    // Copy everything first, so a failure leaves the skills directory as it was.
    let new_root = stage.join("new");
    let mut copy = CopyBudget::default();
    for skill in &skills {
        let Some(src) = skill.dir.as_deref() else {
            continue;
        };
        let boundary = fs::canonicalize(src).map_err(|e| SkillError::io(src, &e))?;
        copy_tree(
            package,
            &boundary,
            &boundary,
            &new_root.join(&skill.name),
            &mut copy,
        )?;
    }

    let old_root = stage.join("old");
    fs::create_dir_all(&old_root).map_err(|e| SkillError::io(&old_root, &e))?;
    let mut names = Vec::new();
    for skill in &skills {
        if let Err(e) = swap_in(&skill.name, &new_root, &old_root, skills_dir) {
            // Put back what this install replaced so far; the staging
            // folder (with the old copies) is removed by the caller.
            for name in &names {
                let _ = fs::remove_dir_all(skills_dir.join(name));
                let _ = fs::rename(old_root.join(name), skills_dir.join(name));
            }
            return Err(e);
        }
        names.push(skill.name.clone());
    }
    names.sort();
    Ok(names)
}

/// Moves `new_root/<name>` to `skills_dir/<name>`, keeping a replaced
/// install in `old_root/<name>` (and putting it back if the move fails).
fn swap_in(
    name: &str,
    new_root: &Path,
    old_root: &Path,
    skills_dir: &Path,
) -> Result<(), SkillError> {
    let target = skills_dir.join(name);
    let old = old_root.join(name);
    let replaced = fs::symlink_metadata(&target).is_ok();
    if replaced {
        fs::rename(&target, &old).map_err(|e| SkillError::io(&target, &e))?;
    }
    if let Err(e) = fs::rename(new_root.join(name), &target) {
        if replaced {
            let _ = fs::rename(&old, &target);
        }
        return Err(SkillError::io(&target, &e));
    }
    Ok(())
}

/// Folders under `dir` that hold a `SKILL.md`; does not look inside a
/// skill, hidden folders (`.git`) or below [`MAX_SEARCH_DEPTH`].
fn find_skill_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if dir.join("SKILL.md").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    if depth >= MAX_SEARCH_DEPTH {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        find_skill_dirs(&sub, depth + 1, out);
    }
}

#[derive(Default)]
struct CopyBudget {
    bytes: u64,
    entries: usize,
}

/// Copies the skill folder `src` (inside `boundary`, the skill's canonical
/// folder) to `dst`. Symlinks are copied as what they point to, and only
/// when that stays inside the skill: a local package must not pull in
/// files from elsewhere on the machine. `.git` is left out.
fn copy_tree(
    package: &str,
    boundary: &Path,
    src: &Path,
    dst: &Path,
    budget: &mut CopyBudget,
) -> Result<(), SkillError> {
    let not_a_skill = |reason: String| SkillError::NotASkill {
        package: package.to_string(),
        reason,
    };
    fs::create_dir_all(dst).map_err(|e| SkillError::io(dst, &e))?;
    let entries = fs::read_dir(src).map_err(|e| SkillError::io(src, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| SkillError::io(src, &e))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        budget.entries += 1;
        if budget.entries > MAX_ENTRIES {
            return Err(not_a_skill(format!("more than {MAX_ENTRIES} files")));
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| SkillError::io(&path, &e))?;
        let real = if kind.is_symlink() {
            match fs::canonicalize(&path) {
                Ok(r) if r.starts_with(boundary) => r,
                Ok(_) => {
                    return Err(not_a_skill(format!(
                        "symlink {} points outside its skill folder",
                        path.display()
                    )));
                }
                // A dangling link carries nothing worth installing.
                Err(_) => continue,
            }
        } else {
            path.clone()
        };
        let meta = fs::metadata(&real).map_err(|e| SkillError::io(&real, &e))?;
        let to = dst.join(&name);
        if meta.is_dir() {
            // A link to a folder above it would recurse forever.
            if kind.is_symlink() && src.starts_with(&real) {
                return Err(not_a_skill(format!(
                    "symlink {} points to a folder that contains it",
                    path.display()
                )));
            }
            copy_tree(package, boundary, &real, &to, budget)?;
        } else if meta.is_file() {
            budget.bytes += meta.len();
            if budget.bytes > MAX_EXTRACTED_BYTES {
                return Err(not_a_skill(format!(
                    "larger than {} MiB",
                    MAX_EXTRACTED_BYTES / (1024 * 1024)
                )));
            }
            fs::copy(&real, &to).map_err(|e| SkillError::io(&real, &e))?;
        }
    }
    Ok(())
}
