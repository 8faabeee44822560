//! The store's password stays Gantry's: the agent's commands see neither
//! `GANTRY_STORE` nor any URL with credentials in their environment; a
//! password on the command line is warned of and never printed; and
//! `--store-password-file` (or `PGPASSFILE`) gives the password with a URL
//! that carries none, from a file the agent's commands cannot read.
//!
//! The test server trusts every local login and ignores passwords, so it
//! cannot tell which password a client sent. A stand-in server that asks
//! for one in clear text ([`PasswordCatcher`]) shows what the CLI sends.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_testkit::postgres::TestDatabase;
use serde_json::{Value, json};

use crate::common::{Scratch, json_lines, stderr, stdout};

/// A script whose one command prints its environment.
fn env_script(s: &Scratch) -> String {
    s.script(
        "env.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "env"}}]}},
            {"reply": {"text": "done"}}
        ]}),
    )
}

/// The output of the run's one command.
fn command_output(out: &std::process::Output) -> String {
    let lines = json_lines(out);
    let command: &Value = lines
        .iter()
        .find(|l| l["type"] == "item.completed" && l["item"]["type"] == "command_execution")
        .unwrap_or_else(|| panic!("no command in {lines:#?}"));
    command["item"]["aggregated_output"]
        .as_str()
        .expect("output")
        .to_owned()
}

/// `url` (`postgres://USER@HOST/DB`) with `password` in its userinfo.
fn with_password(url: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user, host) = rest
        .split_once('@')
        .expect("GANTRY_TEST_POSTGRES names its user");
    format!("{scheme}://{user}:{password}@{host}")
}

/// A file only its owner may read, holding `content`.
fn private_file(dir: &Path, name: &str, content: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_see_neither_the_store_url_nor_its_password() {
    let Some(db) = TestDatabase::create().await else {
        return;
    };
    let s = Scratch::new();
    let model = env_script(&s);
    let store = with_password(&db.url(), "pw-e2e-STORE");
    let out = s
        .gantry()
        .env("GANTRY_STORE", &store)
        .env("DATABASE_URL", "postgres://u:pw-e2e-DBURL@db.example/app")
        .env("UPSTREAM", "https://user:tok-e2e-UPSTREAM@example.com")
        .env("DOCS_URL", "https://docs.example.com/guide")
        .args(["exec", "--json", "--model", &model, "show the environment"])
        .output()
        .expect("run gantry");
    assert!(out.status.success(), "{}", stderr(&out));
    let env = command_output(&out);
    assert!(env.contains("PATH="), "the command ran env: {env}");
    assert!(
        env.contains("DOCS_URL=https://docs.example.com/guide"),
        "{env}"
    );
    for hidden in [
        "GANTRY_STORE",
        "GANTRY_DATA_DIR",
        "pw-e2e-STORE",
        "pw-e2e-DBURL",
        "tok-e2e-UPSTREAM",
    ] {
        assert!(!env.contains(hidden), "{hidden} reached the command: {env}");
    }
    // The store given in the environment is the one used: the thread is in
    // PostgreSQL, not in the data dir.
    assert!(!s.dir.path().join("data/gantry.db").exists());
    let list = s.run(&["threads", "list", "--json", "--store", &db.url()]);
    assert!(list.status.success(), "{}", stderr(&list));
    let listed: Value = serde_json::from_slice(&list.stdout).expect("json");
    assert_eq!(
        listed["threads"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_on_the_command_line_is_warned_of_and_never_printed() {
    let Some(db) = TestDatabase::create().await else {
        return;
    };
    let s = Scratch::new();
    let model = s.script("hi.json", json!({"steps": [{"reply": {"text": "hi"}}]}));
    let store = with_password(&db.url(), "pw-e2e-ARGV");
    let out = s.run(&["exec", "--store", &store, "--model", &model, "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("gantry: warning: the command line carries a password"))
        .collect();
    assert_eq!(warnings.len(), 1, "warned once: {err}");
    assert!(
        warnings[0].contains(&db.url()) && warnings[0].contains("--store-password-file"),
        "names the URL without its password, and the fix: {err}"
    );
    assert!(!err.contains("pw-e2e-ARGV") && !stdout(&out).contains("pw-e2e-ARGV"));

    // The same store with the password in a file: no warning, and the
    // agent's commands cannot read the file. (The server ignores passwords;
    // `the_password_file_is_what_the_server_gets` shows it is sent.) The
    // file is outside the temp dir, which sandboxed commands may read.
    let outside = gantry_testkit::process::dir_outside_temp().expect("a dir outside /tmp");
    let file = private_file(outside.path(), "store.password", "pw-e2e-FILE\n");
    let file = file.to_string_lossy().into_owned();
    let model = s.script(
        "cat.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": format!("cat {file}")}}]}},
            {"reply": {"text": "done"}}
        ]}),
    );
    let out = s.run(&[
        "exec",
        "--json",
        "--store",
        &db.url(),
        "--store-password-file",
        &file,
        "--model",
        &model,
        "read the password",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let output = command_output(&out);
    assert!(
        output.contains("Permission denied") && !output.contains("pw-e2e-FILE"),
        "{output}"
    );
}

/// A PostgreSQL server in the test that asks each client for a clear-text
/// password, keeps it, and refuses the login: what the client sent is all
/// it is for.
struct PasswordCatcher {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl PasswordCatcher {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        // Serves until the test process ends.
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                if let Ok(password) = catch(stream) {
                    kept.lock().expect("lock").push(password);
                }
            }
        });
        Self { port, seen }
    }

    /// `postgres://gantry@HOST:PORT/DATABASE` on this server: no password.
    fn url(&self, database: &str) -> String {
        format!("postgres://gantry@127.0.0.1:{}/{database}", self.port)
    }

    /// The passwords sent so far.
    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

/// One client: an optional SSLRequest (declined), its startup message, a
/// request for a clear-text password, the password, a FATAL error.
fn catch(mut stream: TcpStream) -> std::io::Result<String> {
    fn int(stream: &mut TcpStream) -> std::io::Result<usize> {
        let mut bytes = [0; 4];
        stream.read_exact(&mut bytes)?;
        Ok(u32::from_be_bytes(bytes) as usize)
    }
    fn skip(stream: &mut TcpStream, n: usize) -> std::io::Result<Vec<u8>> {
        let mut bytes = vec![0; n];
        stream.read_exact(&mut bytes)?;
        Ok(bytes)
    }
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    const SSL_REQUEST: usize = 80_877_103;
    let (len, code) = (int(&mut stream)?, int(&mut stream)?);
    let len = if len == 8 && code == SSL_REQUEST {
        stream.write_all(b"N")?;
        let len = int(&mut stream)?;
        skip(&mut stream, 4)?; // the protocol version
        len
    } else {
        len
    };
    skip(&mut stream, len.saturating_sub(8))?; // user, database, options
    // AuthenticationCleartextPassword.
    stream.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3])?;
    let tag = skip(&mut stream, 1)?;
    if tag != b"p" {
        return Err(std::io::Error::other("not a password message"));
    }
    let len = int(&mut stream)?;
    let body = skip(&mut stream, len.saturating_sub(4))?;
    let password = String::from_utf8_lossy(body.strip_suffix(b"\0").unwrap_or(&body)).into_owned();
    let mut fields = Vec::new();
    for (code, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "28P01"),
        (b'M', "password authentication failed for user \"gantry\""),
    ] {
        fields.push(code);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut error = vec![b'E'];
    error.extend_from_slice(
        &u32::try_from(fields.len() + 4)
            .expect("small")
            .to_be_bytes(),
    );
    error.extend_from_slice(&fields);
    stream.write_all(&error)?;
    Ok(password)
}

#[test]
fn the_password_file_is_what_the_server_gets() {
    let server = PasswordCatcher::start();
    let s = Scratch::new();
    let model = s.script("hi.json", json!({"steps": [{"reply": {"text": "hi"}}]}));
    let file = private_file(s.dir.path(), "store.password", "pw-FROM-FILE\n");
    let file = file.to_string_lossy().into_owned();

    // The engine's store.
    let store = server.url("gantry");
    let out = s.run(&[
        "exec",
        "--store",
        &store,
        "--store-password-file",
        &file,
        "--model",
        &model,
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot open the store {store}"))
            && err.contains("password authentication failed"),
        "{err}"
    );
    assert!(!err.contains("pw-FROM-FILE"), "{err}");
    assert_eq!(server.seen(), ["pw-FROM-FILE"]);

    // The control plane's store, its own option.
    let out = s.run(&[
        "control-plane",
        "list-tokens",
        "--store",
        &server.url("gantry_cp"),
        "--store-password-file",
        &file,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("pw-FROM-FILE"), "{}", stderr(&out));
    assert_eq!(server.seen(), ["pw-FROM-FILE"; 2]);

    // Without the option, the passfile libpq would read: sqlx-postgres
    // reads `PGPASSFILE` too.
    let passfile = private_file(
        s.dir.path(),
        "pgpass",
        &format!(
            "127.0.0.1:{}:gantry:gantry:pw-FROM-PGPASSFILE\n",
            server.port
        ),
    );
    let out = s
        .gantry()
        .env("PGPASSFILE", &passfile)
        .args(["exec", "--store", &store, "--model", &model, "hi"])
        .output()
        .expect("run gantry");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("pw-FROM-PGPASSFILE"));
    assert_eq!(
        server.seen().last().map(String::as_str),
        Some("pw-FROM-PGPASSFILE")
    );
}

#[test]
fn a_password_file_others_may_read_is_refused_before_connecting() {
    use std::os::unix::fs::PermissionsExt;
    let server = PasswordCatcher::start();
    let s = Scratch::new();
    let file = private_file(s.dir.path(), "store.password", "pw-SHARED\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = s.run(&[
        "threads",
        "list",
        "--store",
        &server.url("gantry"),
        "--store-password-file",
        &file.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("chmod 600") && !err.contains("pw-SHARED"),
        "{err}"
    );
    assert!(server.seen().is_empty(), "nothing was sent");
}
