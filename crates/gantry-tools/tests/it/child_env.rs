//! Commands do not inherit Gantry's keys: secret-looking variables of the
//! process are dropped, allowed and explicitly set ones pass.
//!
//! The only test of its binary: it sets variables of the test process,
//! which must not race other tests spawning processes.

use crate::common;

use common::ctx;
use gantry_tools::sandbox::child_env;
use gantry_tools::{ShellTool, Tool};
use gantry_types::ItemKind;
use serde_json::json;

#[tokio::test]
async fn commands_get_the_environment_without_keys() {
    // SAFETY: no other thread of this test binary reads or writes the
    // environment yet (single test; the runtime's workers are idle).
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-envtest-OPENAI");
        std::env::set_var("SOME_SERVICE_TOKEN", "tok-envtest-SERVICE");
        std::env::set_var("DB_PASSWORD", "pw-envtest");
        std::env::set_var("MY_LLM_KEYVAR", "sk-envtest-NAMED");
        std::env::set_var("ALLOWED_TOKEN", "tok-envtest-ALLOWED");
        std::env::set_var("PLAIN_SETTING", "plain-value");
    }
    // A variable named as a key's source, and one let through on purpose.
    child_env::hide("MY_LLM_KEYVAR");
    child_env::pass(["ALLOWED_TOKEN"]);

    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    // Set for commands explicitly (a client's `Initialize.env`): passes.
    let mut env = (*c.env).clone();
    env.insert("CLIENT_API_KEY".to_owned(), "sk-envtest-CLIENT".to_owned());
    c.env = std::sync::Arc::new(env);
    let out = ShellTool.run(json!({"command": "env"}), c).await;
    let ItemKind::CommandExecution { output, .. } = out.item else {
        panic!("not a command: {:?}", out.item);
    };
    for hidden in [
        "sk-envtest-OPENAI",
        "tok-envtest-SERVICE",
        "pw-envtest",
        "sk-envtest-NAMED",
    ] {
        assert!(!output.contains(hidden), "{hidden} leaked: {output}");
    }
    for shown in [
        "ALLOWED_TOKEN=tok-envtest-ALLOWED",
        "PLAIN_SETTING=plain-value",
        "CLIENT_API_KEY=sk-envtest-CLIENT",
        "PATH=",
    ] {
        assert!(output.contains(shown), "{shown} missing: {output}");
    }
}
