//! Opening the data dir: its lock, its store, the engine over them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use gantry_core::{Engine, EngineBuilder, EngineConfig, ModelResolver};
use gantry_store::postgres::Claim;
use gantry_store::{Opening, Store};

use crate::args::{Global, StoreArg};
use crate::store::{Location, Password, When};

/// An open data dir and the engine's store. Dropping it releases the lock.
pub(crate) struct DataDir {
    pub path: PathBuf,
    pub store: Arc<dyn Store>,
    /// The store, named for messages (a file, or a URL without password).
    pub store_name: String,
    /// The store, while it is opened in the background.
    opening: Option<Arc<Opening>>,
    /// The file the store's password was read from, if any.
    password_file: Option<PathBuf>,
    _claim: Option<Claim>,
    _lock: File,
}

impl DataDir {
    /// Opens (creating) the data dir and takes its lock, then opens the
    /// store: `--store`, else the config file's `store`, else `gantry.db`
    /// in the data dir. One process owns a data dir, and a PostgreSQL
    /// database, at a time, so crash recovery never closes another live
    /// process's turns and seqs never collide.
    pub(crate) async fn open(global: &Global, store: &StoreArg) -> Result<Self> {
        Self::open_store(global, store, When::Now).await
    }

    /// Like [`DataDir::open`], with a SQLite store opened in the background,
    /// for a command whose first work need not wait for it: its errors come
    /// from [`DataDir::opened`] (and from the store's calls).
    pub(crate) async fn open_in_background(global: &Global, store: &StoreArg) -> Result<Self> {
        Self::open_store(global, store, When::InBackground).await
    }

    async fn open_store(global: &Global, store: &StoreArg, when: When) -> Result<Self> {
        let path = data_dir_path(global)?;
        create_data_dir(&path)?;
        let lock = lock(&path)?;
        let url = match &store.url {
            Some(url) => Some(url.clone()),
            None => crate::config::store_url(global.config.as_deref())?,
        };
        let location = match url.as_deref().filter(|u| !u.trim().is_empty()) {
            Some(url) => Location::parse(url)?,
            None => Location::Sqlite(path.join("gantry.db")),
        };
        let password = Password::for_store(&location, store.password_file.as_deref())?;
        let opened = crate::store::open(&location, password.as_ref(), &path, when).await?;
        Ok(Self {
            path,
            store: opened.store,
            store_name: opened.name,
            opening: opened.opening,
            password_file: password.and(store.password_file.clone()),
            _claim: opened.claim,
            _lock: lock,
        })
    }

    /// Waits until the store is open; why it cannot be, if it cannot.
    pub(crate) async fn opened(&self) -> Result<()> {
        match &self.opening {
            Some(opening) => opening
                .ready()
                .await
                .map(drop)
                .with_context(|| format!("cannot open the store {}", self.store_name)),
            None => Ok(()),
        }
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

/// The files sandboxed commands must not read, besides the data dir: the
/// configuration file (keys may be in it) and the store's password file.
pub(crate) fn sandbox_protected(global: &Global, data: Option<&DataDir>) -> Vec<PathBuf> {
    crate::config::file_path(global.config.as_deref())
        .into_iter()
        .chain(data.and_then(|d| d.password_file.clone()))
        .collect()
}

fn lock(dir: &Path) -> Result<File> {
    let path = dir.join("gantry.lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| unusable(dir, "cannot write in", &e))?;
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

/// Creates the data dir `path` and its parents, where they are missing.
pub(crate) fn create_data_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| unusable(path, "cannot create", &e))
}

/// Why the data dir `path` cannot be used, and what to do: a newcomer's
/// default dir may sit under a read-only home, or a path given by hand
/// under a file.
fn unusable(path: &Path, what: &str, error: &std::io::Error) -> anyhow::Error {
    anyhow!(
        "{what} the data dir {}: {error}; choose another with --data-dir (or GANTRY_DATA_DIR), \
         or make it a directory gantry can write in",
        path.display()
    )
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
