//! A 0.7.0 thread's `git_skill_packages`: each repository is fetched at
//! its `commit_reference` (a full commit id, a branch or a tag; one commit
//! deep) into a temporary directory, and the skills in the listed
//! directories (the whole repository when none is listed) are installed
//! with the engine's skills API into the thread's `.gantry/skills`, where
//! the thread finds them when it starts.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gantry_core::Engine;
use gantry_runner_protocol::messages::ThreadGitSkillPackage;

/// How long fetching one repository may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);

/// Where a thread's workspace keeps the skills it discovers.
pub(crate) fn skills_dir(workspace: &Path) -> PathBuf {
    workspace.join(".gantry").join("skills")
}

/// Installs every package's skills into `skills_dir`; the names of the
/// skills installed. The first package that cannot be fetched or holds no
/// valid skill stops it, with a reason naming the package.
pub(crate) async fn install(
    engine: &Engine,
    packages: &[ThreadGitSkillPackage],
    skills_dir: &Path,
) -> Result<Vec<String>, String> {
    let mut installed = Vec::new();
    for package in packages {
        let url = package.repository_url.trim();
        let reference = package.commit_reference.trim();
        let fail = |why: String| format!("git skill package {url} at {reference}: {why}");
        check_reference(reference).map_err(fail)?;
        let checkout = tempfile::Builder::new()
            .prefix("gantry-skills-")
            .tempdir()
            .map_err(|e| fail(format!("cannot make a temporary directory: {e}")))?;
        fetch(url, reference, checkout.path()).await.map_err(fail)?;
        let dirs = if package.skills.is_empty() {
            vec![checkout.path().to_path_buf()]
        } else {
            package
                .skills
                .iter()
                .map(|s| inside(checkout.path(), &s.directory_path))
                .collect::<Result<Vec<_>, _>>()
                .map_err(fail)?
        };
        for dir in dirs {
            let coordinate = dir.to_string_lossy().into_owned();
            let names = engine
                .skills()
                .install(&coordinate, skills_dir)
                .await
                .map_err(|e| fail(e.to_string()))?;
            installed.extend(names);
        }
    }
    Ok(installed)
}

/// A reference git takes as one, never as an option.
fn check_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty()
        || reference.starts_with('-')
        || reference.contains(|c: char| c.is_whitespace() || c.is_control())
    {
        return Err("the commit reference is not a commit id, branch or tag".to_owned());
    }
    Ok(())
}

/// `directory` of the checkout, which must stay inside it.
fn inside(root: &Path, directory: &str) -> Result<PathBuf, String> {
    let relative = Path::new(directory.trim().trim_start_matches("./"));
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "skill directory {directory:?} must be a path inside the repository"
        ));
    }
    let path = root.join(relative);
    let (real_root, real) = match (root.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(path)) => (root, path),
        _ => return Err(format!("the repository has no directory {directory:?}")),
    };
    // A symlink in the repository must not lead out of it.
    if !real.starts_with(&real_root) || !real.is_dir() {
        return Err(format!(
            "skill directory {directory:?} is not a directory inside the repository"
        ));
    }
    Ok(real)
}

/// Fetches `reference` of `url`, one commit deep, and checks it out in `dir`.
async fn fetch(url: &str, reference: &str, dir: &Path) -> Result<(), String> {
    git(dir, &["init", "--quiet"]).await?;
    git(
        dir,
        &["fetch", "--quiet", "--depth", "1", "--", url, reference],
    )
    .await?;
    git(dir, &["checkout", "--quiet", "--detach", "FETCH_HEAD"]).await
}

/// Runs `git args` in `dir`; its first `fatal:` line when it fails.
async fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let child = tokio::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        // Never wait for a password prompt nobody will answer.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let out = tokio::time::timeout(FETCH_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| format!("git timed out after {}s", FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("fatal:"))
        .or_else(|| stderr.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("git failed")
        .to_owned();
    Err(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_that_git_would_read_as_options_are_refused() {
        for bad in ["", "--upload-pack=x", "a b", "main\n"] {
            assert!(check_reference(bad).is_err(), "{bad:?}");
        }
        for good in ["main", "v1.2.0", "0123456789abcdef0123456789abcdef01234567"] {
            assert!(check_reference(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn skill_directories_stay_inside_the_checkout() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("skills/a")).unwrap();
        assert!(inside(root.path(), "skills/a").is_ok());
        assert!(inside(root.path(), "./skills/a").is_ok());
        for bad in ["../x", "/etc", "skills/../../x", "missing"] {
            assert!(inside(root.path(), bad).is_err(), "{bad:?}");
        }
    }
}
