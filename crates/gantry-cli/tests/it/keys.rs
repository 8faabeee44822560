//! `gantry exec` keeps its keys from the agent's commands: a key in its
//! environment is not in theirs, so no command can print it into the log.

use crate::common;

use common::*;
use serde_json::json;

const KEY: &str = "sk-exec-SECRET789";

#[test]
fn commands_do_not_see_the_key_in_gantrys_environment() {
    let s = Scratch::new();
    let model = s.script(
        "env.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "env"}}]}},
            {"reply": {"text": "done"}}
        ]}),
    );
    let out = s
        .gantry()
        .env("OPENAI_API_KEY", KEY)
        .env("GANTRY_TEST_PASSED_TOKEN", "tok-passed")
        .args([
            "exec",
            "--json",
            "--sandbox",
            "danger-full-access",
            "--pass-env",
            "GANTRY_TEST_PASSED_TOKEN",
            "--model",
            &model,
            "print the environment",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.contains("HOME="), "the command ran: {printed}");
    assert!(!printed.contains(KEY), "the key reached the command");
    assert!(
        printed.contains("GANTRY_TEST_PASSED_TOKEN=tok-passed"),
        "--pass-env lets a name through"
    );
    for path in files_under(&s.dir.path().join("data")) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the key is in {}",
            path.display()
        );
    }
}
