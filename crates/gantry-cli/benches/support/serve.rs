//! `gantry serve` as a process with one listener, for the benches that
//! measure a protocol over its own port (`http_sse`, `dashboard_paint`,
//! `codewhale_http`, `rome_ndjson`). Each bench includes this file through
//! `#[path]`, so it uses only part of it.
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use gantry_testkit::MockLlm;

/// The listener a bench starts: serve's arguments for it, the config it
/// adds after the provider, and the start of the line that names its address.
pub(crate) struct Listener<'a> {
    pub args: Vec<OsString>,
    pub config: &'a str,
    pub ready: &'a str,
}

/// `gantry serve --http-addr` whose default model is `llm`; the child and
/// the API's address (`HOST:PORT`).
pub(crate) fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, String) {
    let http = Listener {
        args: vec!["--http-addr".into(), "127.0.0.1:0".into()],
        config: "",
        ready: "gantry: serving the HTTP API and dashboard on http://",
    };
    serve_with(scratch, llm, http)
}

/// `gantry serve` in `scratch` (bare home, its own workspace and data dir)
/// whose default model is `llm`, with `listener`; the child and the rest of
/// the ready line (the address, without a trailing `/`).
pub(crate) fn serve_with(
    scratch: &std::path::Path,
    llm: &MockLlm,
    listener: Listener<'_>,
) -> (Child, String) {
    let home = scratch.join("home");
    let ws = scratch.join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    let config = scratch.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"mock/bench\"\n[providers.mock]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\napi_key = \"bench\"\nmodels = [\"bench\"]\n{}",
            llm.base_url(),
            listener.config
        ),
    )
    .expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen-addr", "127.0.0.1:0", "--workspace"])
        .arg(&ws)
        .arg("--data-dir")
        .arg(scratch.join("data"))
        .args(&listener.args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gantry serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("gantry serve said nothing")
            .expect("stderr");
        if let Some(addr) = line.strip_prefix(listener.ready) {
            break addr.trim().trim_end_matches('/').to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}
