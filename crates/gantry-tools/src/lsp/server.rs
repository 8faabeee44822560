//! One running language server: spawned in its own process group, initialized
//! with the workspace root, files synced from disk before each query, and
//! its exit watched so a crash is noticed and reported.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use gantry_types::lsp::{
    LspDiagnostic, LspHover, LspLocation, LspPosition, LspServerInfo, LspSymbol,
};
use lsp_types::{PublishDiagnosticsParams, Url};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::config::{LspCommand, LspServerConfig, LspTimeouts, language_id};
use super::connection::{Connection, Handler, RequestError, method_not_found};
use super::diagnostics::{Awaited, DiagnosticsCache};
use super::{LspError, convert};
use crate::sandbox::SandboxPolicy;

/// Stderr lines kept to explain a crash.
const STDERR_TAIL_LINES: usize = 20;
/// How long a polite `shutdown`/`exit` may take before the process is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Called once if the process exits without being asked to.
pub(crate) type OnCrash = Box<dyn FnOnce(LspServerInfo) + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What describes the server, shared with its process task.
struct Meta {
    language: String,
    root: PathBuf,
    command: Vec<String>,
    pid: Option<u32>,
    /// Name and version the server reported at initialize.
    reported: OnceLock<(String, Option<String>)>,
    /// Why the process is gone, once it is.
    exit: Mutex<Option<String>>,
}

impl Meta {
    fn info(&self) -> LspServerInfo {
        let exit = lock(&self.exit).clone();
        let (name, version) = match self.reported.get() {
            Some((n, v)) => (n.clone(), v.clone()),
            None => (program_name(&self.command), None),
        };
        LspServerInfo {
            language: self.language.clone(),
            name,
            version,
            running: exit.is_none() && self.reported.get().is_some(),
            root: self.root.to_string_lossy().into_owned(),
            command: self.command.clone(),
            pid: if exit.is_none() { self.pid } else { None },
            error: exit,
        }
    }
}

fn program_name(command: &[String]) -> String {
    command
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A document as last sent to the server.
struct Doc {
    version: i32,
    text: String,
}

/// The result of syncing one file.
struct Synced {
    uri: Url,
    /// The version the server now has.
    version: i32,
    /// Whether this sync sent new text (so earlier diagnostics are stale).
    sent: bool,
    /// The publish count just before the text was sent.
    seq_before: u64,
}

/// One server process and its connection.
pub(crate) struct LspServer {
    meta: Arc<Meta>,
    conn: Connection,
    /// The `capabilities` of the initialize result, as sent.
    capabilities: OnceLock<Value>,
    documents: tokio::sync::Mutex<HashMap<Url, Doc>>,
    diagnostics: Arc<DiagnosticsCache>,
    /// Set before a requested stop, so the exit is not a crash.
    stopping: CancellationToken,
    /// Kills the process group now.
    kill: CancellationToken,
    /// Fires once the process has exited.
    gone: CancellationToken,
    timeouts: LspTimeouts,
}

impl Drop for LspServer {
    fn drop(&mut self) {
        // Nobody can use it any more: make sure its whole group goes too.
        self.stopping.cancel();
        self.kill.cancel();
    }
}

impl LspServer {
    /// Spawns `config`'s first installed command in `root` (canonical),
    /// confined by `sandbox` when given, and runs the initialize handshake
    /// within the startup timeout.
    pub(crate) async fn start(
        config: &LspServerConfig,
        root: &Path,
        timeouts: LspTimeouts,
        sandbox: Option<SandboxPolicy>,
        on_crash: OnCrash,
    ) -> Result<Arc<Self>, LspError> {
        let language = config.language.clone();
        let Some((command, program)) = config.installed_command() else {
            return Err(LspError::NotInstalled {
                tried: describe_missing(&config.commands),
                language,
            });
        };
        let root_uri = Url::from_directory_path(root).map_err(|()| LspError::InvalidRoot {
            root: root.display().to_string(),
        })?;
        let argv = command.argv();
        let spawn_error = |error: String| LspError::Spawn {
            language: language.clone(),
            command: argv.join(" "),
            error,
        };
        let mut cmd = Command::new(&program);
        // Gantry's environment minus its keys.
        crate::sandbox::child_env::apply(cmd.as_std_mut(), std::iter::empty::<(&str, &str)>());
        // Not the runtime's /proc, nor its rights: it runs the workspace's
        // code (build scripts, plugins), which the model may have written.
        crate::sandbox::isolate(cmd.as_std_mut());
        // After isolate's hook: confined once its own /proc is mounted.
        if let Some(policy) = &sandbox {
            crate::sandbox::confine(cmd.as_std_mut(), policy, root)
                .map_err(|e| spawn_error(e.to_string()))?;
        }
        let mut child = cmd
            .args(&command.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own group: servers spawn helpers (cargo check, ...) that
            // must die with it.
            .process_group(0)
            .spawn()
            .map_err(|e| spawn_error(e.to_string()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error("its stdio could not be captured".into()));
        };
        let meta = Arc::new(Meta {
            language: language.clone(),
            root: root.to_path_buf(),
            command: argv.clone(),
            pid: child.id(),
            reported: OnceLock::new(),
            exit: Mutex::new(None),
        });
        let diagnostics = Arc::new(DiagnosticsCache::new());
        let handler = Arc::new(ServerHandler {
            diagnostics: diagnostics.clone(),
            root_uri: root_uri.clone(),
            language: language.clone(),
        });
        let conn = Connection::start(BufReader::new(stdout), stdin, handler);
        let stopping = CancellationToken::new();
        let kill = CancellationToken::new();
        let gone = CancellationToken::new();
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_task = tokio::spawn(keep_stderr_tail(stderr, tail.clone()));
        tokio::spawn(watch_process(Watch {
            child,
            meta: meta.clone(),
            tail,
            stderr_task,
            stopping: stopping.clone(),
            kill: kill.clone(),
            gone: gone.clone(),
            on_crash,
        }));
        let server = Arc::new(Self {
            meta,
            conn,
            capabilities: OnceLock::new(),
            documents: tokio::sync::Mutex::new(HashMap::new()),
            diagnostics,
            stopping,
            kill,
            gone,
            timeouts,
        });
        match server.initialize(config, &root_uri).await {
            Ok(()) => Ok(server),
            Err(e) => {
                // A server that failed to start is not a crash to report.
                server.stopping.cancel();
                server.kill.cancel();
                Err(spawn_error(e))
            }
        }
    }

    /// The handshake; records the server's name, version and capabilities.
    async fn initialize(&self, config: &LspServerConfig, root_uri: &Url) -> Result<(), String> {
        let folder_name = self
            .meta
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".into());
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "gantry", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": self.meta.root,
            "workspaceFolders": [{"uri": root_uri, "name": folder_name}],
            "initializationOptions": config.init_options,
            "capabilities": client_capabilities(),
        });
        let never = CancellationToken::new();
        let result = match self
            .conn
            .request("initialize", params, self.timeouts.startup, &never)
            .await
        {
            Ok(result) => result,
            Err(RequestError::Timeout) => {
                return Err(format!(
                    "it did not answer initialize within {}s",
                    self.timeouts.startup.as_secs()
                ));
            }
            Err(RequestError::Rpc { message, .. }) => {
                return Err(format!("it refused initialize: {message}"));
            }
            Err(RequestError::Cancelled) => return Err("startup was cancelled".into()),
            Err(RequestError::Closed(why)) => {
                // Let the process task record how it exited (and its stderr).
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.gone.cancelled()).await;
                return Err(lock(&self.meta.exit).clone().unwrap_or(why));
            }
        };
        self.conn.notify("initialized", json!({}));
        let name = result
            .pointer("/serverInfo/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| program_name(&self.meta.command));
        let version = result
            .pointer("/serverInfo/version")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let _ = self.meta.reported.set((name, version));
        let capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        let _ = self.capabilities.set(capabilities);
        Ok(())
    }

    /// How it looks now.
    pub(crate) fn info(&self) -> LspServerInfo {
        self.meta.info()
    }

    /// Whether the process is alive.
    pub(crate) fn is_running(&self) -> bool {
        !self.gone.is_cancelled()
    }

    /// Its workspace root (canonical).
    pub(crate) fn root(&self) -> &Path {
        &self.meta.root
    }

    /// Stops it: `shutdown` and `exit`, then a kill if it lingers. Returns
    /// once the process is gone.
    pub(crate) async fn shutdown(&self) {
        self.stopping.cancel();
        if self.is_running() {
            let never = CancellationToken::new();
            let _ = self
                .conn
                .request("shutdown", Value::Null, SHUTDOWN_GRACE, &never)
                .await;
            self.conn.notify("exit", Value::Null);
            if tokio::time::timeout(SHUTDOWN_GRACE, self.gone.cancelled())
                .await
                .is_err()
            {
                self.kill.cancel();
            }
        }
        self.gone.cancelled().await;
    }

    /// Hover at `pos` in `file` (an absolute path inside the root).
    pub(crate) async fn hover(
        &self,
        file: &Path,
        pos: LspPosition,
        cancel: &CancellationToken,
    ) -> Result<LspHover, LspError> {
        self.require("hoverProvider", "hover")?;
        let synced = self.sync(file).await?;
        let v = self
            .call(
                "textDocument/hover",
                position_params(&synced.uri, pos),
                cancel,
            )
            .await?;
        Ok(convert::hover(self.parse("textDocument/hover", v)?))
    }

    /// Where the symbol at `pos` is defined.
    pub(crate) async fn definition(
        &self,
        file: &Path,
        pos: LspPosition,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspLocation>, LspError> {
        self.require("definitionProvider", "go to definition")?;
        let synced = self.sync(file).await?;
        let v = self
            .call(
                "textDocument/definition",
                position_params(&synced.uri, pos),
                cancel,
            )
            .await?;
        Ok(convert::definition(
            self.parse("textDocument/definition", v)?,
        ))
    }

    /// Every reference to the symbol at `pos`.
    pub(crate) async fn references(
        &self,
        file: &Path,
        pos: LspPosition,
        include_declaration: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspLocation>, LspError> {
        self.require("referencesProvider", "find references")?;
        let synced = self.sync(file).await?;
        let mut params = position_params(&synced.uri, pos);
        params["context"] = json!({"includeDeclaration": include_declaration});
        let v = self.call("textDocument/references", params, cancel).await?;
        let locations: Option<Vec<lsp_types::Location>> =
            self.parse("textDocument/references", v)?;
        Ok(locations
            .unwrap_or_default()
            .into_iter()
            .map(convert::location)
            .collect())
    }

    /// Workspace symbols matching `query`.
    pub(crate) async fn symbols(
        &self,
        query: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspSymbol>, LspError> {
        self.require("workspaceSymbolProvider", "workspace symbols")?;
        let v = self
            .call("workspace/symbol", json!({"query": query}), cancel)
            .await?;
        Ok(convert::symbols(self.parse("workspace/symbol", v)?))
    }

    /// The file's diagnostics: it is synced from disk, then the server's
    /// answer to that version is awaited (bounded by the diagnostics timeout).
    pub(crate) async fn file_diagnostics(
        &self,
        file: &Path,
        cancel: &CancellationToken,
    ) -> Result<Vec<LspDiagnostic>, LspError> {
        self.ensure_running()?;
        let synced = self.sync(file).await?;
        let awaited = Awaited {
            uri: &synced.uri,
            // An unchanged file: any publish so far answers it.
            after_seq: if synced.sent { synced.seq_before } else { 0 },
            version: synced.version,
        };
        tokio::select! {
            found = self.diagnostics.wait(awaited, self.timeouts.diagnostics, &self.gone) => Ok(found),
            _ = cancel.cancelled() => Err(LspError::Cancelled),
        }
    }

    /// Everything the server has published so far.
    pub(crate) fn all_diagnostics(&self) -> Vec<LspDiagnostic> {
        self.diagnostics.all()
    }

    fn ensure_running(&self) -> Result<(), LspError> {
        match lock(&self.meta.exit).clone() {
            Some(error) => Err(self.crashed(error)),
            None => Ok(()),
        }
    }

    fn crashed(&self, error: String) -> LspError {
        LspError::Crashed {
            language: self.meta.language.clone(),
            root: self.meta.root.display().to_string(),
            error,
        }
    }

    /// Refuses a feature the server did not announce.
    fn require(&self, capability: &str, feature: &'static str) -> Result<(), LspError> {
        self.ensure_running()?;
        match self.capabilities.get().and_then(|c| c.get(capability)) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Err(LspError::Unsupported {
                language: self.meta.language.clone(),
                name: self.info().name,
                feature,
            }),
            Some(_) => Ok(()),
        }
    }

    /// Sends the file's current text if the server does not have it yet.
    async fn sync(&self, file: &Path) -> Result<Synced, LspError> {
        let text = tokio::fs::read_to_string(file)
            .await
            .map_err(|e| LspError::path(file, format!("cannot read it: {e}")))?;
        let uri =
            Url::from_file_path(file).map_err(|()| LspError::path(file, "not an absolute path"))?;
        // Held while sending, so versions reach the server in order.
        let mut docs = self.documents.lock().await;
        let seq_before = self.diagnostics.seq();
        let (version, sent) = match docs.get_mut(&uri) {
            None => {
                let ext = file.extension().map(|e| e.to_string_lossy().into_owned());
                let language_id = language_id(&self.meta.language, ext.as_deref().unwrap_or(""));
                self.conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": language_id, "version": 1, "text": text,
                    }}),
                );
                docs.insert(uri.clone(), Doc { version: 1, text });
                (1, true)
            }
            Some(doc) if doc.text != text => {
                doc.version += 1;
                self.conn.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri, "version": doc.version},
                        "contentChanges": [{"text": text}],
                    }),
                );
                doc.text = text;
                (doc.version, true)
            }
            Some(doc) => (doc.version, false),
        };
        Ok(Synced {
            uri,
            version,
            sent,
            seq_before,
        })
    }

    /// A request within the request timeout, errors named for the user.
    async fn call(
        &self,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, LspError> {
        let language = self.meta.language.clone();
        match self
            .conn
            .request(method, params, self.timeouts.request, cancel)
            .await
        {
            Ok(v) => Ok(v),
            Err(RequestError::Timeout) => Err(LspError::Timeout {
                language,
                method: method.to_owned(),
                timeout: self.timeouts.request,
            }),
            Err(RequestError::Cancelled) => Err(LspError::Cancelled),
            Err(RequestError::Rpc { message, .. }) => Err(LspError::Server {
                language,
                method: method.to_owned(),
                message,
            }),
            Err(RequestError::Closed(why)) => {
                // The process task knows better (exit status, stderr).
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.gone.cancelled()).await;
                Err(self.crashed(lock(&self.meta.exit).clone().unwrap_or(why)))
            }
        }
    }

    fn parse<T: DeserializeOwned>(&self, method: &str, v: Value) -> Result<T, LspError> {
        serde_json::from_value(v).map_err(|e| LspError::Server {
            language: self.meta.language.clone(),
            method: method.to_owned(),
            message: format!("unexpected answer: {e}"),
        })
    }
}

fn position_params(uri: &Url, pos: LspPosition) -> Value {
    json!({
        "textDocument": {"uri": uri},
        "position": {"line": pos.line, "character": pos.character},
    })
}

/// What we can do, so servers send what we read.
fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": {
            "synchronization": {"dynamicRegistration": false, "didSave": false},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "definition": {"linkSupport": true},
            "references": {},
            "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
        },
        "workspace": {
            "symbol": {},
            "workspaceFolders": true,
            "configuration": true,
        },
        "window": {"workDoneProgress": false},
    })
}

/// "`pylsp` was not found on PATH (install it with ...); `pyright-langserver` ...".
fn describe_missing(commands: &[LspCommand]) -> String {
    if commands.is_empty() {
        return "no command is configured".into();
    }
    commands
        .iter()
        .map(|c| {
            let place = if c.program.contains('/') {
                "does not exist or is not executable"
            } else {
                "was not found on PATH"
            };
            match &c.install_hint {
                Some(hint) => format!("`{}` {place} ({hint})", c.program),
                None => format!("`{}` {place}", c.program),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Answers what the server sends us besides responses.
struct ServerHandler {
    diagnostics: Arc<DiagnosticsCache>,
    root_uri: Url,
    language: String,
}

impl Handler for ServerHandler {
    fn notification(&self, method: &str, params: Value) {
        match method {
            "textDocument/publishDiagnostics" => {
                match serde_json::from_value::<PublishDiagnosticsParams>(params) {
                    Ok(p) => self.diagnostics.publish(p),
                    Err(e) => {
                        tracing::debug!(language = %self.language, error = %e, "ignoring unreadable diagnostics")
                    }
                }
            }
            "window/logMessage" | "window/showMessage" => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::debug!(language = %self.language, "language server: {message}");
            }
            _ => {}
        }
    }

    fn request(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            // No settings of our own: the server's defaults, one per item asked.
            "workspace/configuration" => {
                let n = params
                    .get("items")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                Ok(Value::Array(vec![Value::Null; n]))
            }
            "workspace/workspaceFolders" => {
                Ok(json!([{"uri": self.root_uri, "name": "workspace"}]))
            }
            "client/registerCapability"
            | "client/unregisterCapability"
            | "window/workDoneProgress/create"
            | "window/showMessageRequest"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            _ => Err(method_not_found(method)),
        }
    }
}

async fn keep_stderr_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut t = lock(&tail);
        if t.len() == STDERR_TAIL_LINES {
            t.pop_front();
        }
        t.push_back(line);
    }
}

/// What the process task owns.
struct Watch {
    child: Child,
    meta: Arc<Meta>,
    tail: Arc<Mutex<VecDeque<String>>>,
    stderr_task: tokio::task::JoinHandle<()>,
    stopping: CancellationToken,
    kill: CancellationToken,
    gone: CancellationToken,
    on_crash: OnCrash,
}

/// Waits for the process to exit (or kills its group on request), records
/// why, and reports a crash when nobody asked it to stop.
async fn watch_process(mut w: Watch) {
    let exited = tokio::select! {
        status = w.child.wait() => Some(status),
        _ = w.kill.cancelled() => None,
    };
    let status = match exited {
        Some(status) => {
            kill_group(w.meta.pid);
            status
        }
        None => {
            kill_group(w.meta.pid);
            let _ = w.child.start_kill();
            w.child.wait().await
        }
    };
    // The last stderr lines usually say why; they are read to the end
    // unless a helper process still holds the pipe.
    let _ = tokio::time::timeout(Duration::from_secs(1), &mut w.stderr_task).await;
    w.stderr_task.abort();
    let crashed = !w.stopping.is_cancelled();
    let why = if crashed {
        let status = match status {
            Ok(s) => format!("the process exited ({s})"),
            Err(e) => format!("the process was lost: {e}"),
        };
        let tail: Vec<String> = lock(&w.tail).iter().cloned().collect();
        if tail.is_empty() {
            status
        } else {
            format!("{status}; its last output: {}", tail.join("\n"))
        }
    } else {
        "stopped".to_owned()
    };
    *lock(&w.meta.exit) = Some(why);
    w.gone.cancel();
    if crashed {
        (w.on_crash)(w.meta.info());
    }
}

/// Kills what is left of the server's process group (helpers it spawned).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}
