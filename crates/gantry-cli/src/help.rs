//! `gantry --help`: the commands grouped by purpose, each with an example
//! to run. clap lists subcommands in one flat section and has no groups,
//! so the top-level help template replaces `{subcommands}` with the
//! section built here, from [`GROUPS`] and each command's own `about`.

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use clap::error::ErrorKind;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::args::Cli;

/// A heading of `gantry --help` and its commands, each with one example.
pub(crate) struct Group {
    /// The heading, without its colon.
    pub title: &'static str,
    /// Each command's name and a command line to run it with.
    pub commands: &'static [(&'static str, &'static str)],
}

/// Every subcommand, once, by purpose. A test checks that each one clap
/// knows is here (and nothing else), and that each example parses.
pub(crate) const GROUPS: &[Group] = &[
    Group {
        title: "Run an agent",
        commands: &[
            (
                "exec",
                "gantry exec --model gpt-4.1 \"add a --verbose flag to the CLI\"",
            ),
            ("threads", "gantry threads list"),
            ("jobs", "gantry jobs list"),
        ],
    },
    Group {
        title: "Serve protocols",
        commands: &[
            (
                "serve",
                "gantry serve --workspace ~/src/app --http-addr 127.0.0.1:4080",
            ),
            ("acp", "gantry acp --model anthropic/claude-sonnet-4-5"),
            (
                "codewhale",
                "gantry codewhale --stdio --workspace ~/src/app",
            ),
            (
                "runner",
                "gantry runner --control-plane http://cp.internal:7400 --token-file runner.token",
            ),
            (
                "control-plane",
                "gantry control-plane add-runner builder-1 > builder-1.token",
            ),
        ],
    },
    Group {
        title: "Manage",
        commands: &[
            (
                "tokens",
                "gantry tokens create --name ci --read-only > ci.token",
            ),
            (
                "completions",
                "gantry completions bash > ~/.local/share/bash-completion/completions/gantry",
            ),
            ("help", "gantry help exec"),
        ],
    },
];

/// The heading of subcommands that no group names; a test keeps it from
/// ever showing, but a forgotten command is listed rather than hidden.
const UNGROUPED: &str = "Other commands";

/// The CLI's definition with the grouped help.
pub(crate) fn command() -> clap::Command {
    let mut cmd = Cli::command();
    // Built first, so clap's own `help` subcommand is there to be listed.
    cmd.build();
    let template = template(&cmd);
    cmd.help_template(template)
}

/// Parses the process's arguments with the grouped help (exits on `--help`
/// and usage errors, as `Cli::parse` does). Without a command, the help
/// is the error: clap's "requires a subcommand" lists the commands without
/// what they do.
pub(crate) fn parse() -> Cli {
    let mut cmd = command();
    let matches: ArgMatches = match cmd.try_get_matches_from_mut(std::env::args_os()) {
        Ok(matches) => matches,
        Err(e) if e.kind() == ErrorKind::MissingSubcommand => {
            let help = cmd.render_help();
            // Colours as clap's own errors get them: a terminal, no NO_COLOR.
            if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
                eprint!("{}", help.ansi());
            } else {
                eprint!("{help}");
            }
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    };
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The top-level help template: clap's layout, with the grouped commands
/// where it would list them flat.
fn template(cmd: &clap::Command) -> String {
    let header = cmd.get_styles().get_header();
    let (on, off) = (header.render(), header.render_reset());
    format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}\
         {on}Options:{off}\n{{options}}{{after-help}}",
        groups(cmd)
    )
}

/// The grouped section: per group a heading, then each command's name,
/// its one-line about and its example.
fn groups(cmd: &clap::Command) -> String {
    let styles = cmd.get_styles();
    let (header, literal) = (styles.get_header(), styles.get_literal());
    let names: Vec<&str> = cmd.get_subcommands().map(clap::Command::get_name).collect();
    let ungrouped: Vec<(&str, &str)> = names
        .iter()
        .filter(|name| {
            !GROUPS
                .iter()
                .any(|g| g.commands.iter().any(|(n, _)| n == *name))
        })
        .map(|name| (*name, ""))
        .collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    let sections = GROUPS
        .iter()
        .map(|g| (g.title, g.commands.to_vec()))
        .chain((!ungrouped.is_empty()).then_some((UNGROUPED, ungrouped)));
    for (title, commands) in sections {
        let _ = writeln!(out, "{}{title}:{}", header.render(), header.render_reset());
        for (name, example) in commands {
            let about = cmd
                .find_subcommand(name)
                .and_then(clap::Command::get_about)
                .map(ToString::to_string)
                .unwrap_or_default();
            // One style in the list, whether the about keeps its period
            // (a verbatim doc comment does) or not.
            let about = about.trim_end_matches('.');
            let pad = width - name.len().min(width);
            let _ = writeln!(
                out,
                "  {}{name}{}{:pad$}{about}",
                literal.render(),
                literal.render_reset(),
                ""
            );
            if !example.is_empty() {
                let _ = writeln!(out, "  {:width$}$ {example}", "");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `gantry --help` as a user sees it (without colours).
    fn long_help() -> String {
        command().render_long_help().to_string()
    }

    /// The command names the help lists (the first word of each indented
    /// line that is not an example or an option).
    fn listed(help: &str) -> Vec<String> {
        let section = help
            .split("\nOptions:\n")
            .next()
            .unwrap_or_default()
            .split("\nUsage:")
            .nth(1)
            .unwrap_or_default();
        section
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter(|l| !l.starts_with(' '))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_command_is_listed_once_in_a_group() {
        let mut cmd = Cli::command();
        cmd.build();
        let help = long_help();
        let listed = listed(&help);
        let known: Vec<&str> = cmd.get_subcommands().map(clap::Command::get_name).collect();
        assert!(known.len() > 5, "too few commands: {known:?}");
        for name in &known {
            let times = listed.iter().filter(|l| l == name).count();
            assert_eq!(times, 1, "`{name}` listed {times} times in:\n{help}");
            // Whole: the template would eat a `{` of it.
            let about = cmd.find_subcommand(name).and_then(clap::Command::get_about);
            let about = about.map(ToString::to_string).unwrap_or_default();
            assert!(
                help.contains(about.trim_end_matches('.')),
                "{name}: {about}"
            );
        }
        assert_eq!(listed.len(), known.len(), "listed: {listed:?}\n{help}");
        assert!(
            !help.contains(UNGROUPED),
            "a command is in no group of help::GROUPS:\n{help}"
        );
        for group in GROUPS {
            assert!(help.contains(&format!("\n{}:\n", group.title)), "{help}");
        }
    }

    #[test]
    fn every_example_is_shown_and_parses() {
        let help = long_help();
        for (name, example) in GROUPS.iter().flat_map(|g| g.commands) {
            assert!(help.contains(&format!("$ {example}\n")), "{example}");
            let words = crate::docs_commands::commands(example);
            let [words] = words.as_slice() else {
                panic!("{example}: one command expected");
            };
            let args = crate::docs_commands::gantry_args(words)
                .unwrap_or_else(|| panic!("{example}: not a gantry command"));
            assert_eq!(args.first().map(String::as_str), Some(*name), "{example}");
            let argv = std::iter::once("gantry".to_owned()).chain(args);
            if let Err(e) = Cli::try_parse_from(argv) {
                assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{example}: {e}");
            }
        }
    }

    #[test]
    fn the_help_keeps_the_introduction_and_the_options() {
        let help = long_help();
        assert!(help.starts_with("Gantry: one runtime for coding agents."));
        assert!(
            help.contains("\nUsage: gantry [OPTIONS] <COMMAND>\n"),
            "{help}"
        );
        assert!(help.contains("--data-dir <DIR>"), "{help}");
        // The short help is grouped as well.
        let short = command().render_help().to_string();
        assert!(short.contains("\nServe protocols:\n"), "{short}");
    }

    #[test]
    fn examples_in_every_commands_help_parse() {
        // `gantry exec --help` and the others show examples too.
        let mut cmd = command();
        cmd.build();
        let mut checked = 0;
        let mut stack = vec![cmd];
        while let Some(mut cmd) = stack.pop() {
            let help = cmd.render_long_help().to_string();
            for line in help.lines() {
                for words in crate::docs_commands::commands(line.trim().trim_start_matches("$ ")) {
                    let Some(args) = crate::docs_commands::gantry_args(&words) else {
                        continue;
                    };
                    checked += 1;
                    let argv = std::iter::once("gantry".to_owned()).chain(args);
                    if let Err(e) = Cli::try_parse_from(argv) {
                        assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{line}: {e}");
                    }
                }
            }
            stack.extend(cmd.get_subcommands().cloned());
        }
        assert!(checked > 20, "only {checked} examples found");
    }
}
