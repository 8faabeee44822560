//! The errors a newcomer meets first, from the real binary in a fresh
//! HOME with an empty environment: each is one line that names what is
//! wrong and says what to do next, and where it suggests a command, that
//! command runs.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Scratch, stderr, stdout};

/// The one line gantry said on stderr, after checking it failed with the
/// exit code of setup errors.
fn the_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(out));
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    lines[0].to_owned()
}

/// Runs `line` with `sh` in the scratch workspace and environment, the
/// gantry under test first on PATH.
fn run_shell(s: &Scratch, line: &str) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_gantry"))
        .parent()
        .expect("the binary's dir");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let mut sh = Command::new("sh");
    sh.env_clear();
    for (key, value) in s.gantry().get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    sh.env("PATH", path)
        .arg("-c")
        .arg(line)
        .current_dir(s.workspace())
        .output()
        .expect("sh")
}

#[test]
fn no_api_key_says_which_variable_and_what_runs_without_one() {
    let s = Scratch::new();
    let out = s.run(&["exec", "say hello"]);
    assert_eq!(
        the_error(&out),
        "gantry: error: no API key for gpt-4.1 at https://api.openai.com/v1: set OPENAI_API_KEY \
         (or name another variable with --api-key-env), or run a scripted model, which needs \
         none (--model scripted:FILE): see the last example of gantry exec --help"
    );
    // That example, run as shown, answers without a key.
    let help = stdout(&s.run(&["exec", "--help"]));
    let example: Vec<&str> = help
        .lines()
        .rev()
        .take_while(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(example.len(), 2, "{help}");
    let ran = run_shell(&s, &example.join("\n"));
    assert!(ran.status.success(), "{example:?}: {}", stderr(&ran));
    assert!(stdout(&ran).starts_with("Hello!\n"), "{}", stdout(&ran));
}

#[test]
fn no_api_key_in_a_checkout_suggests_the_demo_and_the_demo_runs() {
    let s = Scratch::new();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.json");
    std::fs::create_dir_all(s.workspace().join("examples")).expect("examples");
    std::fs::copy(demo, s.workspace().join("examples/demo.json")).expect("demo");
    let out = s.run(&["exec", "--model", "gpt-4o", "say hello"]);
    let error = the_error(&out);
    assert_eq!(
        error,
        "gantry: error: no API key for gpt-4o at https://api.openai.com/v1: set OPENAI_API_KEY \
         (or name another variable with --api-key-env), or try the scripted demo, which needs \
         none: gantry exec --model scripted:examples/demo.json \"write a greeting script\""
    );
    let (_, suggested) = error.split_once("needs none: ").expect("a command");
    let ran = run_shell(&s, suggested);
    assert!(ran.status.success(), "{suggested}: {}", stderr(&ran));
    assert!(s.workspace().join("greet.sh").is_file());
}

#[test]
fn no_model_chosen_names_the_providers_and_where_a_default_goes() {
    let s = Scratch::new();
    // A newcomer's first config: a provider, no default model.
    let config = s.dir.path().join("home/.config/gantry/config.toml");
    std::fs::create_dir_all(config.parent().expect("dir")).expect("config dir");
    std::fs::write(
        &config,
        "[providers.anthropic]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
    )
    .expect("config");
    let out = s.run(&["exec", "say hello"]);
    assert_eq!(
        the_error(&out),
        format!(
            "gantry: error: no model chosen, and none of the configured providers (anthropic) \
             serves the built-in default gpt-4.1: pass --model anthropic/MODEL, or set \
             default_model = \"anthropic/MODEL\" in {}",
            config.display()
        )
    );
    // With a model its provider lists, the example is one to paste.
    std::fs::write(
        &config,
        "[providers.local]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\n\
         models = [\"claude-sonnet-4-5\"]\n",
    )
    .expect("config");
    let out = s.run(&["exec", "say hello"]);
    assert!(
        the_error(&out).contains("pass --model local/claude-sonnet-4-5, or set default_model"),
        "{}",
        stderr(&out)
    );
    // Following it, the next step is the provider's key.
    std::fs::write(
        &config,
        "[providers.anthropic]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n",
    )
    .expect("config");
    let out = s.run(&[
        "exec",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "say hello",
    ]);
    assert_eq!(
        the_error(&out),
        "gantry: error: provider `anthropic` needs an API key: set the environment variable \
         ANTHROPIC_API_KEY"
    );
}

/// A port another listener holds.
fn held_port() -> (std::net::TcpListener, String) {
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = held.local_addr().expect("addr").to_string();
    (held, addr)
}

#[test]
fn a_port_in_use_is_named_with_its_flag_and_what_to_do() {
    let s = Scratch::new();
    let (_held, addr) = held_port();
    let out = s.run(&[
        "serve",
        "--storage-backend",
        "memory",
        "--listen-addr",
        &addr,
    ]);
    assert_eq!(
        the_error(&out),
        format!(
            "gantry: error: cannot listen on {addr} (--listen-addr): the address is in use, by \
             another gantry or another server; stop that one, or choose another address with \
             --listen-addr (port 0 picks a free one)"
        )
    );
    let out = s.run(&[
        "serve",
        "--storage-backend",
        "memory",
        "--listen-addr",
        "127.0.0.1:0",
        "--http-addr",
        &addr,
    ]);
    assert_eq!(
        the_error(&out),
        format!(
            "gantry: error: cannot listen on {addr} (--http-addr): the address is in use, by \
             another gantry or another server; stop that one, or choose another address with \
             --http-addr (port 0 picks a free one)"
        )
    );
}

#[test]
fn an_unwritable_data_dir_is_named_with_what_to_do() {
    let s = Scratch::new();
    // Tests run as root, which permission bits do not stop: a path under a
    // regular file cannot be made by anyone.
    let file = s.dir.path().join("file");
    std::fs::write(&file, "not a directory").expect("file");
    let under = file.join("sub");
    let out = s.run(&[
        "--data-dir",
        &under.display().to_string(),
        "threads",
        "list",
    ]);
    assert_eq!(
        the_error(&out),
        format!(
            "gantry: error: cannot create the data dir {}: Not a directory (os error 20); \
             choose another with --data-dir (or GANTRY_DATA_DIR), or make it a directory gantry \
             can write in",
            under.display()
        )
    );
    // The same from the environment, and for a data dir that is a file.
    let out = s
        .gantry()
        .env("GANTRY_DATA_DIR", &file)
        .args(["exec", "--model", "scripted:none.json", "say hello"])
        .output()
        .expect("gantry");
    assert_eq!(
        the_error(&out),
        format!(
            "gantry: error: cannot create the data dir {}: File exists (os error 17); choose \
             another with --data-dir (or GANTRY_DATA_DIR), or make it a directory gantry can \
             write in",
            file.display()
        )
    );
}
