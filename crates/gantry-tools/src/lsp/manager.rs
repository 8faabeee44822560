//! [`LspManager`]: the configured languages and the running servers, one
//! per (workspace root, language); start, stop, restart and list them, and
//! route each query to the server whose root holds the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use gantry_types::lsp::{
    LspDiagnostic, LspEvent, LspHover, LspLocation, LspPosition, LspServerInfo, LspSymbol,
};
use tokio_util::sync::CancellationToken;

use super::config::{LspCommand, LspServerConfig, LspTimeouts, default_servers};
use super::server::LspServer;
use super::tools::{LspOp, LspTool};
use super::{LspError, ServerKey};
use crate::Tool;
use crate::sandbox::SandboxPolicy;
use crate::workspace_path;

/// Symbols returned when the caller gives no limit (the seed's default).
pub const DEFAULT_SYMBOL_LIMIT: usize = 20;

/// Receives the manager's events (started, stopped, crashed).
pub type LspEventSink = Arc<dyn Fn(LspEvent) + Send + Sync>;

/// Language servers. Cheap to clone (clones share state); safe to use from
/// many tasks. Dropping the last clone kills every server it started.
#[derive(Clone)]
pub struct LspManager {
    inner: Arc<Inner>,
}

struct Inner {
    configs: Mutex<Vec<LspServerConfig>>,
    timeouts: Mutex<LspTimeouts>,
    servers: Mutex<BTreeMap<ServerKey, Arc<LspServer>>>,
    sink: Mutex<Option<LspEventSink>>,
    /// The sandbox of the server for a root (none: unconfined).
    sandbox: Mutex<Option<LspSandbox>>,
    /// Serializes starts and stops, so one key never gets two processes.
    lifecycle: tokio::sync::Mutex<()>,
}

/// The sandbox a language server for a root runs in ([`LspManager::set_sandbox`]).
pub type LspSandbox = Arc<dyn Fn(&Path) -> SandboxPolicy + Send + Sync>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    fn emit(&self, event: LspEvent) {
        let sink = lock(&self.sink).clone();
        if let Some(sink) = sink {
            sink(event);
        }
    }
}

impl Default for LspManager {
    fn default() -> Self {
        Self::new()
    }
}

impl LspManager {
    /// A manager with the built-in languages ([`default_servers`]) and
    /// default timeouts.
    pub fn new() -> Self {
        Self::with_servers(default_servers())
    }

    /// A manager that knows only `configs`.
    pub fn with_servers(configs: Vec<LspServerConfig>) -> Self {
        Self {
            inner: Arc::new(Inner {
                configs: Mutex::new(configs),
                timeouts: Mutex::new(LspTimeouts::default()),
                servers: Mutex::new(BTreeMap::new()),
                sink: Mutex::new(None),
                sandbox: Mutex::new(None),
                lifecycle: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Runs each server started from now on confined by `policy_of` its
    /// root: a language server runs the workspace's code (build scripts,
    /// plugins), which the model may have written.
    pub fn set_sandbox(&self, policy_of: LspSandbox) {
        *lock(&self.inner.sandbox) = Some(policy_of);
    }

    /// Adds a language, or replaces the config of one with the same name
    /// (e.g. another command for `python`). Running servers keep their
    /// command until restarted.
    pub fn set_server(&self, config: LspServerConfig) {
        let mut configs = lock(&self.inner.configs);
        match configs
            .iter_mut()
            .find(|c| c.language.eq_ignore_ascii_case(&config.language))
        {
            Some(existing) => *existing = config,
            None => configs.push(config),
        }
    }

    /// Runs `language` (a name or an alias) with `command` instead of its
    /// configured ones, keeping its extensions and aliases.
    pub fn set_command(&self, language: &str, command: LspCommand) -> Result<(), LspError> {
        let mut configs = lock(&self.inner.configs);
        let known = known(&configs);
        let config = configs
            .iter_mut()
            .find(|c| c.answers_to(language))
            .ok_or_else(|| LspError::UnknownLanguage {
                language: language.trim().to_owned(),
                known,
            })?;
        config.commands = vec![command];
        Ok(())
    }

    /// The configured languages.
    pub fn server_configs(&self) -> Vec<LspServerConfig> {
        lock(&self.inner.configs).clone()
    }

    /// Replaces the time limits (for servers started from now on).
    pub fn set_timeouts(&self, timeouts: LspTimeouts) {
        *lock(&self.inner.timeouts) = timeouts;
    }

    /// Where started, stopped and crashed events go.
    pub fn set_event_sink(&self, sink: LspEventSink) {
        *lock(&self.inner.sink) = Some(sink);
    }

    /// The config for `language` (a name or an alias).
    pub fn config_for_language(&self, language: &str) -> Result<LspServerConfig, LspError> {
        let configs = lock(&self.inner.configs);
        configs
            .iter()
            .find(|c| c.answers_to(language))
            .cloned()
            .ok_or_else(|| LspError::UnknownLanguage {
                language: language.trim().to_owned(),
                known: known(&configs),
            })
    }

    /// The config whose extensions include `file`'s.
    pub fn config_for_file(&self, file: &Path) -> Result<LspServerConfig, LspError> {
        let configs = lock(&self.inner.configs);
        let ext = file.extension().map(|e| e.to_string_lossy().into_owned());
        ext.and_then(|ext| configs.iter().find(|c| c.serves_extension(&ext)).cloned())
            .ok_or_else(|| LspError::NoLanguageFor {
                path: file.display().to_string(),
                known: known(&configs),
            })
    }

    /// Starts the server for `language` in `root` (an existing directory)
    /// and waits until it is initialized. A server already running there is
    /// returned as is; a crashed one is replaced.
    pub async fn start(&self, language: &str, root: &Path) -> Result<LspServerInfo, LspError> {
        let config = self.config_for_language(language)?;
        let root = canonical_root(root)?;
        let _guard = self.inner.lifecycle.lock().await;
        let key = (root.clone(), config.language.clone());
        if let Some(server) = self.server(&key).filter(|s| s.is_running()) {
            return Ok(server.info());
        }
        self.spawn(&config, key).await
    }

    /// Stops the server for `language` in `root` if one runs, and starts
    /// it again.
    pub async fn restart(&self, language: &str, root: &Path) -> Result<LspServerInfo, LspError> {
        let config = self.config_for_language(language)?;
        let root = canonical_root(root)?;
        let _guard = self.inner.lifecycle.lock().await;
        let key = (root.clone(), config.language.clone());
        self.stop_keys(vec![key.clone()]).await;
        self.spawn(&config, key).await
    }

    /// Stops the `language` servers: the one in `root`, or every root's
    /// when `None`. Returns how many were known (running or crashed).
    pub async fn stop(&self, language: &str, root: Option<&Path>) -> Result<usize, LspError> {
        let config = self.config_for_language(language)?;
        let root = root.map(canonical_root).transpose()?;
        let _guard = self.inner.lifecycle.lock().await;
        let keys: Vec<ServerKey> = lock(&self.inner.servers)
            .keys()
            .filter(|(r, l)| *l == config.language && root.as_ref().is_none_or(|root| r == root))
            .cloned()
            .collect();
        Ok(self.stop_keys(keys).await)
    }

    /// Stops every server.
    pub async fn stop_all(&self) {
        let _guard = self.inner.lifecycle.lock().await;
        let keys: Vec<ServerKey> = lock(&self.inner.servers).keys().cloned().collect();
        self.stop_keys(keys).await;
    }

    /// Every server started and not stopped, running or crashed, by root
    /// then language.
    pub fn list(&self) -> Vec<LspServerInfo> {
        lock(&self.inner.servers)
            .values()
            .map(|s| s.info())
            .collect()
    }

    /// Whether a server runs whose root is `workspace`, inside it, or
    /// around it: then the model is offered the LSP tools.
    pub fn serves(&self, workspace: &Path) -> bool {
        lock(&self.inner.servers)
            .values()
            .any(|s| s.is_running() && overlaps(s.root(), workspace))
    }

    /// The tools that offer these servers to the model: `lsp_hover`,
    /// `lsp_definition`, `lsp_references`, `lsp_symbols`, `lsp_diagnostics`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        LspOp::ALL
            .into_iter()
            .map(|op| Arc::new(LspTool::new(op, self.clone())) as Arc<dyn Tool>)
            .collect()
    }

    /// Hover at `pos` in `file`. The file's extension picks the language;
    /// an absolute path is served by the server whose root holds it, a
    /// relative one by the first root of that language where it exists.
    pub async fn hover(
        &self,
        file: &Path,
        pos: LspPosition,
        cancel: &CancellationToken,
    ) -> Result<LspHover, LspError> {
        let (server, abs) = self.server_for_file(file)?;
        server.hover(&abs, pos, cancel).await
    }

    /// Where the symbol at `pos` in `file` is defined.
    pub async fn definition(
        &self,
        file: &Path,
        pos: LspPosition,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspLocation>, LspError> {
        let (server, abs) = self.server_for_file(file)?;
        server.definition(&abs, pos, cancel).await
    }

    /// References to the symbol at `pos` in `file`, with or without its
    /// declaration.
    pub async fn references(
        &self,
        file: &Path,
        pos: LspPosition,
        include_declaration: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspLocation>, LspError> {
        let (server, abs) = self.server_for_file(file)?;
        server
            .references(&abs, pos, include_declaration, cancel)
            .await
    }

    /// Workspace symbols matching `query`, at most `limit`, from every
    /// running server (whose root overlaps `within`, when given). Fails
    /// only when no server could answer.
    pub async fn symbols(
        &self,
        query: &str,
        limit: usize,
        within: Option<&Path>,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspSymbol>, LspError> {
        let servers = self.running(within);
        if servers.is_empty() {
            return Err(no_server(within));
        }
        let mut found = Vec::new();
        let mut first_error = None;
        let mut answered = false;
        for server in servers {
            match server.symbols(query, cancel).await {
                Ok(symbols) => {
                    answered = true;
                    found.extend(symbols);
                }
                Err(LspError::Cancelled) => return Err(LspError::Cancelled),
                Err(e) => {
                    tracing::debug!(error = %e, "a language server gave no symbols");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if !answered => Err(e),
            _ => {
                found.truncate(limit);
                Ok(found)
            }
        }
    }

    /// Diagnostics of `file` (synced from disk, the server's answer
    /// awaited), or when `None` everything the running servers (whose root
    /// overlaps `within`, when given) have published so far.
    pub async fn diagnostics(
        &self,
        file: Option<&Path>,
        within: Option<&Path>,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspDiagnostic>, LspError> {
        if let Some(file) = file {
            let (server, abs) = self.server_for_file(file)?;
            return server.file_diagnostics(&abs, cancel).await;
        }
        let servers = self.running(within);
        if servers.is_empty() {
            return Err(no_server(within));
        }
        Ok(servers.iter().flat_map(|s| s.all_diagnostics()).collect())
    }

    /// The server for `file` and the file's real path. The language comes
    /// from the extension. An absolute path picks the server whose root
    /// holds it (the innermost); a relative one is looked up under each
    /// root of that language in order, and must stay inside it.
    fn server_for_file(&self, file: &Path) -> Result<(Arc<LspServer>, PathBuf), LspError> {
        let config = self.config_for_file(file)?;
        let candidates: Vec<Arc<LspServer>> = lock(&self.inner.servers)
            .iter()
            .filter(|((_, l), _)| *l == config.language)
            .map(|(_, s)| s.clone())
            .collect();
        let found = if file.is_absolute() {
            let real = std::fs::canonicalize(file)
                .map_err(|e| LspError::path(file, format!("cannot open it: {e}")))?;
            candidates
                .into_iter()
                .filter(|s| real.starts_with(s.root()))
                .max_by_key(|s| s.root().as_os_str().len())
                .map(|s| (s, real))
        } else {
            let raw = file.to_string_lossy();
            candidates.into_iter().find_map(|s| {
                let resolved = workspace_path::resolve(s.root(), &raw).ok()?;
                resolved.abs.is_file().then_some((s, resolved.abs))
            })
        };
        found.ok_or_else(|| LspError::NoServer {
            language: config.language.clone(),
            path: file.display().to_string(),
        })
    }

    fn server(&self, key: &ServerKey) -> Option<Arc<LspServer>> {
        lock(&self.inner.servers).get(key).cloned()
    }

    fn running(&self, within: Option<&Path>) -> Vec<Arc<LspServer>> {
        lock(&self.inner.servers)
            .values()
            .filter(|s| s.is_running() && within.is_none_or(|w| overlaps(s.root(), w)))
            .cloned()
            .collect()
    }

    /// Starts a server for `key` (the lifecycle lock held) and records it.
    async fn spawn(
        &self,
        config: &LspServerConfig,
        key: ServerKey,
    ) -> Result<LspServerInfo, LspError> {
        let timeouts = *lock(&self.inner.timeouts);
        let weak = Arc::downgrade(&self.inner);
        let on_crash = Box::new(move |server: LspServerInfo| {
            if let Some(inner) = weak.upgrade() {
                tracing::warn!(language = %server.language, root = %server.root,
                    error = server.error.as_deref().unwrap_or(""), "language server crashed");
                inner.emit(LspEvent::Crashed { server });
            }
        });
        let sandbox = lock(&self.inner.sandbox).as_ref().map(|of| of(&key.0));
        let server = LspServer::start(config, &key.0, timeouts, sandbox, on_crash).await?;
        let info = server.info();
        lock(&self.inner.servers).insert(key, server);
        self.inner.emit(LspEvent::Started {
            server: info.clone(),
        });
        Ok(info)
    }

    /// Stops and forgets the servers of `keys` (the lifecycle lock held);
    /// how many there were.
    async fn stop_keys(&self, keys: Vec<ServerKey>) -> usize {
        let servers: Vec<Arc<LspServer>> = {
            let mut map = lock(&self.inner.servers);
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        for server in &servers {
            let was_running = server.is_running();
            server.shutdown().await;
            if was_running {
                let info = server.info();
                self.inner.emit(LspEvent::Stopped {
                    language: info.language,
                    root: info.root,
                });
            }
        }
        servers.len()
    }
}

fn known(configs: &[LspServerConfig]) -> String {
    configs
        .iter()
        .map(|c| c.language.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn canonical_root(root: &Path) -> Result<PathBuf, LspError> {
    std::fs::canonicalize(root)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| LspError::InvalidRoot {
            root: root.display().to_string(),
        })
}

fn overlaps(root: &Path, workspace: &Path) -> bool {
    root.starts_with(workspace) || workspace.starts_with(root)
}

fn no_server(within: Option<&Path>) -> LspError {
    LspError::NoServers {
        path: within.map_or_else(|| "any workspace".to_owned(), |w| w.display().to_string()),
    }
}
