//! Commands do not inherit Gantry's keys or settings: secret-looking
//! variables of the process, its `GANTRY_*` settings and values carrying
//! credentials (URLs with userinfo) are dropped; allowed, explicitly set and
//! ordinary ones pass.
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
        // Gantry's own settings; the store's URL carries its password.
        std::env::set_var("GANTRY_STORE", "postgres://u:secret-envtest-STORE@h/db");
        std::env::set_var("GANTRY_DATA_DIR", "/envtest-data-dir");
        // Credentials in a URL, whatever the variable is called.
        std::env::set_var("DATABASE_URL", "postgres://u:dburl-envtest-PW@x/y");
        std::env::set_var("UPSTREAM", "https://user:tok-envtest-UPSTREAM@example.com");
        std::env::set_var(
            "MIRROR",
            "https://tok-envtest-USERONLY@example.com/repo.git",
        );
        std::env::set_var("HTTPS_PROXY", "http://user:proxy-envtest-PW@proxy:3128");
        std::env::set_var("LIBPQ_DSN", "host=db password=dsn-envtest-PW");
        // URLs without userinfo are not secrets.
        std::env::set_var("HTTP_PROXY", "http://proxy:3128");
        std::env::set_var("REGISTRY", "https://registry.example.com/@scope/pkg");
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
        "GANTRY_STORE",
        "secret-envtest-STORE",
        "envtest-data-dir",
        "dburl-envtest-PW",
        "tok-envtest-UPSTREAM",
        "tok-envtest-USERONLY",
        "proxy-envtest-PW",
        "dsn-envtest-PW",
    ] {
        assert!(!output.contains(hidden), "{hidden} leaked: {output}");
    }
    for shown in [
        "ALLOWED_TOKEN=tok-envtest-ALLOWED",
        "PLAIN_SETTING=plain-value",
        "CLIENT_API_KEY=sk-envtest-CLIENT",
        "PATH=",
        "HOME=",
        "HTTP_PROXY=http://proxy:3128",
        "REGISTRY=https://registry.example.com/@scope/pkg",
    ] {
        assert!(output.contains(shown), "{shown} missing: {output}");
    }
}
