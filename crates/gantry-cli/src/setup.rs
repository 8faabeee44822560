//! Opening the data dir: its lock, its store, the engine over them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gantry_core::{Engine, EngineBuilder, EngineConfig, ModelResolver};
use gantry_store::SqliteStore;

use crate::args::Global;

/// An open data dir. Dropping it releases the lock.
pub(crate) struct DataDir {
    pub path: PathBuf,
    pub store: Arc<SqliteStore>,
    _lock: File,
}

impl DataDir {
    /// Opens (creating) the data dir and takes its lock: one process owns a
    /// data dir at a time, so crash recovery never closes another live
    /// process's turns and seqs never collide.
    pub(crate) async fn open(global: &Global) -> Result<Self> {
        let path = data_dir_path(global)?;
        std::fs::create_dir_all(&path)
            .with_context(|| format!("cannot create data dir {}", path.display()))?;
        let lock = lock(&path)?;
        let store = SqliteStore::open(&path.join("gantry.db"))
            .await
            .with_context(|| format!("cannot open the store in {}", path.display()))?;
        Ok(Self {
            path,
            store: Arc::new(store),
            _lock: lock,
        })
    }

    /// Starts an engine over this data dir.
    pub(crate) async fn engine(
        &self,
        models: Arc<dyn ModelResolver>,
        config: EngineConfig,
    ) -> Result<Engine> {
        Ok(EngineBuilder::new(self.store.clone(), models)
            .config(config)
            .start()
            .await?)
    }
}

fn lock(dir: &Path) -> Result<File> {
    let path = dir.join("gantry.lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "data dir {} is in use by another gantry process; wait for it or pass another --data-dir",
            dir.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// The data dir `global` names, else the default one (not opened).
pub(crate) fn data_dir_path(global: &Global) -> Result<PathBuf> {
    match &global.data_dir {
        Some(p) => Ok(p.clone()),
        None => default_data_dir(),
    }
}

fn default_data_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("gantry"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/share/gantry")),
        None => bail!("cannot find a data dir: set --data-dir, GANTRY_DATA_DIR or HOME"),
    }
}

/// A token file's first line, which must not be empty.
pub(crate) fn read_token(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_owned();
    if token.is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    Ok(token)
}
