//! `gantry serve --http-addr` as a process, for the benches of the HTTP
//! API and its dashboard (`http_sse`, `dashboard_paint`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use gantry_testkit::MockLlm;

/// `gantry serve --http-addr` whose default model is `llm`; the child and
/// the API's base URL.
pub(crate) fn serve(scratch: &std::path::Path, llm: &MockLlm) -> (Child, String) {
    let home = scratch.join("home");
    let ws = scratch.join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&ws).expect("workspace");
    let config = scratch.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_model = \"mock/bench\"\n[providers.mock]\nkind = \"openai-chat\"\n\
             base_url = \"{}\"\napi_key = \"bench\"\nmodels = [\"bench\"]\n",
            llm.base_url()
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
        .args(["--http-addr", "127.0.0.1:0"])
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
        if let Some(addr) =
            line.strip_prefix("gantry: serving the HTTP API and dashboard on http://")
        {
            break addr.trim().trim_end_matches('/').to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}
