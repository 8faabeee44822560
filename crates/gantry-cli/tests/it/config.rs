//! The configuration file through the real binary: one clear line per error
//! (exit code 2), and a turn through a config-defined provider with its cost.

use crate::common;

use common::{Scratch, files_under, stderr, stdout};
use gantry_testkit::{MockLlm, Script, Step, UsageSpec};

fn write_config(s: &Scratch, text: &str) -> String {
    let path = s.dir.path().join("config.toml");
    std::fs::write(&path, text).expect("write config");
    path.display().to_string()
}

fn one_line_error(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn bad_toml_is_one_line_with_file_and_position() {
    let s = Scratch::new();
    let config = write_config(&s, "default_model = \"x\"\n[providers.local\nkind = 1\n");
    let out = s.run(&["exec", "--config", &config, "hello"]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("{config}:2:")) && err.contains("invalid config"),
        "{err}"
    );
}

#[test]
fn unknown_provider_kind_names_the_provider_and_the_kinds() {
    let s = Scratch::new();
    let config = write_config(&s, "[providers.work]\nkind = \"openai\"\n");
    let out = s.run(&["exec", "--config", &config, "hello"]);
    let err = one_line_error(&out);
    assert!(
        err.contains("provider `work`: unknown provider kind `openai`")
            && err.contains("openai-chat, openai-responses, anthropic"),
        "{err}"
    );
}

#[test]
fn missing_key_variable_names_the_variable_and_the_provider() {
    let s = Scratch::new();
    let config = write_config(
        &s,
        "[providers.claude]\nkind = \"anthropic\"\napi_key_env = \"GANTRY_TEST_MISSING_KEY\"\n",
    );
    let out = s.run(&[
        "exec",
        "--config",
        &config,
        "--model",
        "claude/claude-sonnet-4-5",
        "hello",
    ]);
    let err = one_line_error(&out);
    assert!(
        err.contains("provider `claude`") && err.contains("GANTRY_TEST_MISSING_KEY"),
        "{err}"
    );
}

#[test]
fn a_turn_through_a_configured_provider_prints_its_cost() {
    let s = Scratch::new();
    let usage = UsageSpec {
        prompt_tokens: 100_000,
        completion_tokens: 10_000,
        cached_tokens: 0,
        reasoning_tokens: 0,
        ..UsageSpec::default()
    };
    // The mock server runs on a runtime of the test's own; the binary is a
    // separate process.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let llm = MockLlm::start(Script::new(vec![Step::text("all done").with_usage(usage)]))
        .expect("mock llm");
    // The default file location, found through XDG_CONFIG_HOME.
    let dir = s.dir.path().join("xdg/gantry");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "default_model = \"mock/gpt-4.1\"\n\
             [providers.mock]\nkind = \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"MOCK_KEY\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let out = s
        .gantry()
        .env("XDG_CONFIG_HOME", s.dir.path().join("xdg"))
        .env("MOCK_KEY", "sk-mock-0123456789")
        .args(["exec", "hello"])
        .output()
        .expect("run gantry");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "all done");
    // gpt-4.1: 100k in at $2 + 10k out at $8 per million = $0.28.
    let err = stderr(&out);
    assert!(err.contains("cost $0.2800 (thread $0.2800)"), "{err}");
    let requests = llm.requests();
    assert_eq!(requests[0].body["model"], "gpt-4.1");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-mock-0123456789")
    );
    // The key from the environment is nowhere in the data dir (shell
    // snapshots included).
    for path in files_under(&s.dir.path().join("data")) {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("sk-mock-0123456789"), "{}", path.display());
    }
}
