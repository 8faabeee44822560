//! Installing a pinned npm package into the cache, once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest an install may take before the peer is skipped.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The prefix `package@version` is installed under (`node_modules/...`),
/// installing it first if an earlier run did not; why not otherwise.
pub(crate) fn npm_package(cache: &Path, package: &str, version: &str) -> Result<PathBuf, String> {
    let root = cache.join(format!("{}@{version}", package.replace('/', "+")));
    let done = root.join(".installed");
    if done.is_file() {
        return Ok(root);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    println!("installing {package}@{version} into {} ...", root.display());
    let log = root.join("npm-install.log");
    let log_file =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let mut child = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&root)
        .arg(format!("{package}@{version}"))
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("npm is not available ({e})"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > INSTALL_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "npm install did not finish within {} s (log: {})",
                    INSTALL_TIMEOUT.as_secs(),
                    log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for npm failed: {e}")),
        }
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "npm install {package}@{version} failed ({status}): {}",
            tail.join(" | ")
        ));
    }
    std::fs::write(&done, "").map_err(|e| format!("cannot write {}: {e}", done.display()))?;
    Ok(root)
}
