//! Checks on OS processes, for tests that must prove nothing was left behind.

/// Members of process group `pgid` that are still alive: not zombies and not
/// already inside `exit()`. Zombies of processes a test did not start are left
/// for init to reap, sometimes seconds later, so "gone" means "none alive".
/// Reads `/proc`, so it is Linux-only; elsewhere it returns nothing.
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    const PF_EXITING: u64 = 0x4;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut live = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After "pid (comm) ": state ppid pgrp session tty_nr tpgid flags ...
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(pgrp), Some(flags)) = (f.first(), f.get(2), f.get(6)) else {
            continue;
        };
        let flags = flags.parse::<u64>().unwrap_or(0);
        if *pgrp == pgid.to_string() && *state != "Z" && *state != "X" && flags & PF_EXITING == 0 {
            live.push(pid);
        }
    }
    live
}

/// A fresh directory that is NOT under the system temp dir, for tests that
/// must write somewhere a `workspace-write` sandbox forbids (it allows the
/// workspace and the temp dir). Tries `/var/tmp`, then `$HOME`. Removed when
/// dropped.
pub fn dir_outside_temp() -> std::io::Result<tempfile::TempDir> {
    let temp = std::env::temp_dir();
    let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
    let candidates = [
        Some(std::path::PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ];
    for dir in candidates.into_iter().flatten() {
        let Ok(dir) = std::fs::canonicalize(&dir) else {
            continue;
        };
        if dir.is_dir() && !dir.starts_with(&temp) {
            return tempfile::Builder::new()
                .prefix("gantry-test-")
                .tempdir_in(dir);
        }
    }
    Err(std::io::Error::other(
        "no directory outside the temp dir to test the sandbox with (tried /var/tmp and $HOME)",
    ))
}

/// The live processes (not zombies) that have `arg` among their arguments:
/// how a test finds what a command started when the command, in a PID
/// namespace of its own, cannot tell it a pid.
pub fn pids_with_arg(arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let state = stat
                .get(stat.rfind(')')? + 2..)?
                .split_whitespace()
                .next()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let has = cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes());
            (has && state != "Z").then_some(pid)
        })
        .collect()
}

/// Whether a live process has `arg` among its arguments ([`pids_with_arg`]).
pub fn running_with_arg(arg: &str) -> bool {
    !pids_with_arg(arg).is_empty()
}
