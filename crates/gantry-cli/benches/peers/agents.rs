//! The three agents: where each comes from, how its home is set up, how it
//! is started non-interactively against the scripted model, and the script
//! in its own tool's terms.

use std::path::{Path, PathBuf};
use std::process::Command;

use gantry_testkit::{MockLlm, Script, Step, ToolCallSpec};
use serde_json::json;

use crate::install;

/// codex, pinned.
const CODEX: (&str, &str) = ("@openai/codex", "0.169.0");
/// Claude Code, pinned.
const CLAUDE: (&str, &str) = ("@anthropic-ai/claude-code", "2.1.331");

/// The prompt every agent gets (the script answers it whatever it says).
pub(crate) const PROMPT: &str = "Write the files f1.txt to f10.txt with one shell command each.";

/// The ten commands, one per model round. Each writes a file whose content
/// says whether the profile's variable reached the command.
pub(crate) fn commands() -> Vec<String> {
    (1..=10)
        .map(|n| format!("echo \"round {n} ${{BENCH_PROFILE:-bare}}\" > f{n}.txt"))
        .collect()
}

/// Which `HOME` the agents start in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// Nothing in it but what the agent needs.
    Bare,
    /// A `~/.bashrc` that sleeps 300 ms and exports `BENCH_PROFILE`, sourced
    /// by `~/.profile` as on Debian.
    SlowBashrc,
}

impl Variant {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::Bare => "bare",
            Variant::SlowBashrc => "bashrc",
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Variant::Bare => "Bare HOME",
            Variant::SlowBashrc => {
                "HOME whose ~/.bashrc takes 300 ms (sleep 0.3; export BENCH_PROFILE=profile)"
            }
        }
    }

    /// Writes the variant's profile files into `home`.
    pub(crate) fn populate(self, home: &Path) -> std::io::Result<()> {
        if self == Variant::SlowBashrc {
            std::fs::write(
                home.join(".bashrc"),
                "sleep 0.3\nexport BENCH_PROFILE=profile\n",
            )?;
            std::fs::write(
                home.join(".profile"),
                "if [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n",
            )?;
        }
        Ok(())
    }
}

/// An agent of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    Gantry,
    Codex,
    ClaudeCode,
}

/// An agent ready to run: its binary and version.
pub(crate) struct Ready {
    pub agent: Agent,
    pub binary: PathBuf,
    pub version: String,
}

impl Agent {
    pub(crate) fn all() -> [Agent; 3] {
        [Agent::Gantry, Agent::Codex, Agent::ClaudeCode]
    }

    /// The name `BENCH_PEERS` picks it by.
    pub(crate) fn peer_name(self) -> &'static str {
        match self {
            Agent::Gantry => "gantry",
            Agent::Codex => "codex",
            Agent::ClaudeCode => "claude",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Agent::Gantry => "gantry exec",
            Agent::Codex => "codex exec",
            Agent::ClaudeCode => "claude -p",
        }
    }

    /// Installs the agent if needed and checks that it starts; the reason to
    /// skip it otherwise.
    pub(crate) fn prepare(self, cache: &Path) -> Result<Ready, String> {
        let (binary, version) = match self {
            // `BENCH_GANTRY` compares another build (say, main's) with this one.
            Agent::Gantry => (
                std::env::var_os("BENCH_GANTRY").map_or_else(
                    || PathBuf::from(env!("CARGO_BIN_EXE_gantry")),
                    PathBuf::from,
                ),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            Agent::Codex => {
                let root = install::npm_package(cache, CODEX.0, CODEX.1)?;
                let (pkg, triple) = match std::env::consts::ARCH {
                    "x86_64" => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
                    "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
                    other => return Err(format!("no codex build for {other}")),
                };
                let binary = root
                    .join("node_modules/@openai")
                    .join(pkg)
                    .join("vendor")
                    .join(triple)
                    .join("bin/codex");
                (binary, CODEX.1.to_owned())
            }
            Agent::ClaudeCode => {
                let root = install::npm_package(cache, CLAUDE.0, CLAUDE.1)?;
                let arch = match std::env::consts::ARCH {
                    "x86_64" => "x64",
                    "aarch64" => "arm64",
                    other => return Err(format!("no Claude Code build for {other}")),
                };
                // The platform package's binary; the main package's
                // `bin/claude.exe` is the same file once its postinstall ran.
                let native = root
                    .join("node_modules/@anthropic-ai")
                    .join(format!("claude-code-linux-{arch}"))
                    .join("claude");
                let binary = if native.is_file() {
                    native
                } else {
                    root.join("node_modules/@anthropic-ai/claude-code/bin/claude.exe")
                };
                (binary, CLAUDE.1.to_owned())
            }
        };
        if !binary.is_file() {
            return Err(format!("{} is missing after the install", binary.display()));
        }
        let ok = Command::new(&binary)
            .arg("--version")
            .env_clear()
            .env("PATH", crate::run::PATH)
            .env("HOME", std::env::temp_dir())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        if !ok.status.success() {
            return Err(format!(
                "`{} --version` failed ({}): {}",
                binary.display(),
                ok.status,
                String::from_utf8_lossy(&ok.stderr).trim()
            ));
        }
        Ok(Ready {
            agent: self,
            binary,
            version,
        })
    }
}

impl Ready {
    pub(crate) fn label(&self, no_snapshot: bool) -> String {
        let flag = if no_snapshot {
            " --no-shell-snapshot"
        } else {
            ""
        };
        format!("{}{flag} ({})", self.agent.label(), self.version)
    }

    /// The script, in this agent's tool's terms, and the server for it.
    pub(crate) fn script(&self) -> Script {
        let mut steps: Vec<Step> = commands()
            .into_iter()
            .map(|cmd| {
                let call = match self.agent {
                    Agent::Gantry => ToolCallSpec::new("shell", json!({"command": cmd})),
                    Agent::Codex => ToolCallSpec::new("exec_command", json!({"cmd": cmd})),
                    Agent::ClaudeCode => ToolCallSpec::new(
                        "Bash",
                        json!({"command": cmd, "description": "Write a file"}),
                    ),
                };
                Step::tool_calls(vec![call])
            })
            .collect();
        steps.push(Step::text("All ten files are written."));
        Script::new(steps)
    }

    /// Writes what the agent needs into its fresh `home` to talk to `llm`.
    pub(crate) fn configure_home(&self, home: &Path, llm: &MockLlm) -> std::io::Result<()> {
        if self.agent == Agent::Codex {
            // A custom model provider pointing at the mock (Responses API).
            let dir = home.join(".codex");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(
                dir.join("config.toml"),
                format!(
                    "model = \"bench\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
                    llm.base_url()
                ),
            )?;
        }
        Ok(())
    }

    /// The command that runs the task in `ws` with a clean environment
    /// holding `home`.
    pub(crate) fn command(
        &self,
        home: &Path,
        ws: &Path,
        llm: &MockLlm,
        no_snapshot: bool,
    ) -> Command {
        let mut cmd = Command::new(&self.binary);
        crate::run::clean_env(&mut cmd, home);
        match self.agent {
            Agent::Gantry => {
                if no_snapshot {
                    cmd.arg("--no-shell-snapshot");
                }
                cmd.args(["exec", "--base-url", &llm.base_url(), "--model", "bench"])
                    .arg("--cwd")
                    .arg(ws)
                    .arg(PROMPT);
            }
            Agent::Codex => {
                cmd.args([
                    "exec",
                    "--skip-git-repo-check",
                    "-s",
                    "workspace-write",
                    "-C",
                ])
                .arg(ws)
                .arg(PROMPT)
                .env("MOCK_API_KEY", "bench-key")
                // What npm's launcher sets.
                .env("CODEX_MANAGED_BY_NPM", "1");
            }
            Agent::ClaudeCode => {
                cmd.args(["-p", PROMPT, "--allowedTools", "Bash"])
                    .env("ANTHROPIC_BASE_URL", format!("http://{}", llm.addr()))
                    .env("ANTHROPIC_API_KEY", "sk-ant-bench")
                    // No update checks, telemetry or side requests: every
                    // request is a round of the task.
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_AUTOUPDATER", "1");
            }
        }
        cmd.current_dir(ws);
        cmd
    }
}
