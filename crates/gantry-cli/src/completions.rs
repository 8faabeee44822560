//! `gantry completions SHELL`: the shell's completion script for every
//! command and flag, generated from the CLI's own definition.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::{Generator, Shell};

use crate::args::Cli;

/// Where each shell looks for the script, shown under `--help`.
pub(crate) const EXAMPLES: &str = "\
Examples:
  gantry completions bash > ~/.local/share/bash-completion/completions/gantry
  gantry completions zsh > ~/.zfunc/_gantry    # with fpath+=(~/.zfunc) before compinit in ~/.zshrc
  gantry completions fish > ~/.config/fish/completions/gantry.fish
  gantry completions powershell >> $PROFILE";

/// `gantry completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script on stdout.
pub(crate) fn run(args: &CompletionsArgs) -> Result<ExitCode> {
    let script = script(args.shell)?;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .context("cannot write the completions to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script of `shell` for `gantry`.
fn script(shell: Shell) -> Result<Vec<u8>> {
    let mut cmd = Cli::command();
    cmd.set_bin_name("gantry");
    cmd.build();
    let mut script = Vec::new();
    shell
        .try_generate(&cmd, &mut script)
        .with_context(|| format!("cannot generate the {shell} completions"))?;
    Ok(script)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use clap::ValueEnum;

    use super::*;

    #[test]
    fn bash_completes_commands_and_flags_and_the_script_is_valid_bash() {
        let script = String::from_utf8(script(Shell::Bash).expect("bash")).expect("UTF-8");
        for word in [
            "exec",
            "serve",
            "control-plane",
            "--model",
            "--data-dir",
            "--listen-addr",
        ] {
            assert!(script.contains(word), "`{word}` not completed");
        }
        // `bash -n`: bash reads the script without running it.
        let mut bash = Command::new("bash")
            .arg("-n")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bash");
        bash.stdin
            .take()
            .expect("stdin")
            .write_all(script.as_bytes())
            .expect("write");
        let out = bash.wait_with_output().expect("bash -n");
        assert!(
            out.status.success(),
            "bash -n: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn every_shell_gets_a_script_naming_the_commands() {
        for shell in Shell::value_variants() {
            let script = String::from_utf8(script(*shell).expect("script")).expect("UTF-8");
            assert!(
                script.contains("exec") && script.contains("completions"),
                "{shell}"
            );
        }
    }
}
