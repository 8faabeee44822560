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

/// Run as root too (CI is root, as runners in containers are): a sandboxed
/// command's `/proc` holds its own processes only, so Gantry's environment
/// and command line are not there to read.
#[test]
fn a_sandboxed_command_finds_no_runtime_under_proc() {
    let support = gantry_tools::SandboxSupport::probe();
    if let Some(why) = support.problem.or(support.namespace_problem) {
        eprintln!("SKIPPED: no sandbox with namespaces here: {why}");
        return;
    }
    let s = Scratch::new();
    let look = "echo ppid=$PPID; cat /proc/$PPID/environ /proc/$PPID/cmdline; \
                for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; cat $p/comm; done; env";
    let model = s.script(
        "proc.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": look}}]}},
            {"reply": {"text": "done"}}
        ]}),
    );
    let out = s
        .gantry()
        .env("OPENAI_API_KEY", KEY)
        .args(["exec", "--json", "--model", &model, "look around"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.contains("ppid=0"), "the command ran: {printed}");
    assert!(!printed.contains(KEY), "the key reached the command");
    // Process names: the command's own (bash, cat, tr), never gantry.
    assert!(
        !printed.contains("gantry\\n"),
        "gantry is in view: {printed}"
    );
}

/// Without namespaces for commands (turned off here as a kernel without
/// them would), a data dir inside the workspace would be readable to the
/// agent: `gantry exec` refuses to start unless told to.
#[test]
fn a_data_dir_commands_could_read_is_refused_without_namespaces() {
    if let Some(why) = gantry_tools::SandboxSupport::probe().problem {
        eprintln!("SKIPPED: no sandbox here: {why}");
        return;
    }
    let s = Scratch::new();
    let model = s.script("done.json", json!({"steps": [{"reply": {"text": "done"}}]}));
    let data = s.workspace().join(".gantry-data");
    let run = |allow: bool| {
        let mut cmd = s.gantry();
        cmd.env_remove("GANTRY_ALLOW_EXPOSED_DATA_DIR")
            .env("GANTRY_SANDBOX_NAMESPACES", "off")
            .env("GANTRY_DATA_DIR", &data)
            .args(["exec", "--model", &model, "hi"]);
        if allow {
            cmd.arg("--allow-exposed-data-dir");
        }
        cmd.output().unwrap()
    };
    let refused = run(false);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "stdout: {}",
        stdout(&refused)
    );
    let said = stderr(&refused);
    assert!(said.contains("no namespaces of their own"), "{said}");
    assert!(said.contains("--allow-exposed-data-dir"), "{said}");
    let allowed = run(true);
    assert!(allowed.status.success(), "stderr: {}", stderr(&allowed));
    assert!(stderr(&allowed).contains("warning: sandboxed commands cannot have"));
}

/// The path most developers take: Gantry run as an ordinary user makes the
/// namespaces through a user namespace, although it is not dumpable (its
/// `/proc` files belong to root then). Run as `nobody` where the tests run
/// as root; as another user the tests above take this path already.
#[test]
fn a_non_root_runtime_gives_commands_their_namespaces_too() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let support = gantry_tools::SandboxSupport::probe();
    if !root || support.problem.is_some() || which("setpriv").is_none() {
        eprintln!("SKIPPED: needs root, setpriv and the sandbox to run gantry as nobody");
        return;
    }
    let s = Scratch::new();
    // Everything the run touches belongs to nobody.
    std::fs::set_permissions(s.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let model = s.script(
        "nobody.json",
        json!({"steps": [
            {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command":
                "echo ppid=$PPID uid=$(id -u); echo mine > /tmp/f && cat /tmp/f"}}]}},
            {"reply": {"text": "done"}}
        ]}),
    );
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(s.dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_gantry"))
        .args(["exec", "--json", "--model", &model, "who am i"]);
    let scratch = s.gantry();
    cmd.env_clear()
        .envs(scratch.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(s.workspace());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let printed = stdout(&out);
    if let Some(why) = support.namespace_problem {
        eprintln!("SKIPPED the namespace checks: none here ({why})");
        return;
    }
    assert!(printed.contains("ppid=0 uid=65534"), "{printed}");
    assert!(printed.contains(r"mine\n"), "{printed}");
    assert!(!s.dir.path().join("f").exists());
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
