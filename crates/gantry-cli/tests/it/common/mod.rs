//! Runs the real `gantry` binary in a scratch home, data dir and workspace.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Self { dir }
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Writes a model script and returns the `--model` value for it.
    pub(crate) fn script(&self, name: &str, script: Value) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, script.to_string()).expect("write script");
        format!("scripted:{}", path.display())
    }

    /// `gantry` with a clean environment pointed at this scratch dir.
    pub(crate) fn gantry(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gantry"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // A bare home: the machine's login profile stays out of `bash -lc`.
            .env("HOME", self.dir.path().join("home"))
            .env("GANTRY_DATA_DIR", self.dir.path().join("data"))
            // The data dir is under the temp dir; on a machine without
            // namespaces for commands that is refused unless allowed
            // (`keys.rs` tests the refusal).
            .env("GANTRY_ALLOW_EXPOSED_DATA_DIR", "true")
            .current_dir(self.workspace());
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.gantry().args(args).output().expect("run gantry")
    }
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON lines of `gantry exec --json`.
pub(crate) fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, in its subdirectories too.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Spawns `cmd` (a `gantry serve`) with stderr piped and waits until it has
/// said a line starting with each of `prefixes`; returns the child and the
/// rest of each such line, in the order of `prefixes`. Stderr is read on
/// after, so the server never blocks on a full pipe.
pub(crate) fn spawn_announcing(
    mut cmd: Command,
    prefixes: &[&str],
) -> (std::process::Child, Vec<String>) {
    use std::io::BufRead;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn gantry");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut said: Vec<Option<String>> = vec![None; prefixes.len()];
    while said.iter().any(Option::is_none) {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("gantry ended before saying {prefixes:?}"))
            .expect("stderr");
        for (prefix, slot) in prefixes.iter().zip(&mut said) {
            if let Some(rest) = line.strip_prefix(prefix) {
                *slot = Some(rest.to_owned());
            }
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    (child, said.into_iter().flatten().collect())
}
