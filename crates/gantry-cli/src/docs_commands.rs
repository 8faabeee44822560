//! Every `gantry` command line that README.md and the book show (in `sh`
//! and `sh,no-run` blocks) parses with the CLI's own definition: its
//! subcommands exist, its flags exist where it puts them, its values are
//! ones they take. A doc line naming a flag that was renamed fails here.
//! (Its shell splitting serves the examples of `--help` too: src/help.rs.)

use std::path::{Path, PathBuf};

use clap::Parser;
use clap::error::ErrorKind;

use crate::args::Cli;

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every page of the book, with their paths.
fn pages() -> Vec<(String, String)> {
    let root = root();
    let mut pages = vec![(
        "README.md".to_owned(),
        std::fs::read_to_string(root.join("README.md")).expect("README.md"),
    )];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).expect("a page");
                let name = path.strip_prefix(&root).unwrap_or(&path);
                pages.push((name.display().to_string(), text));
            }
        }
    }
    pages
}

/// The lines of `text`'s `sh` and `sh,no-run` blocks (a line ending in `\`
/// joined with the next), with their line numbers.
fn shell_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_sh = None;
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_sh = match in_sh {
                None => Some(matches!(info.trim(), "sh" | "sh,no-run")),
                Some(_) => None,
            };
            continue;
        }
        if in_sh != Some(true) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((n + 1, String::new()));
        joined.push_str(line);
        match joined.strip_suffix('\\') {
            Some(open) => pending = Some((start, format!("{open} "))),
            None => lines.push((start, joined)),
        }
    }
    lines
}

/// `line` split into commands (at `|`, `&&`, `||`, `;`) of words as a
/// shell splits them, without comments and redirections.
pub(crate) fn commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut has_word = false;
    let mut chars = line.chars().peekable();
    let mut redirect = false;
    let end_word = |word: &mut String,
                    has_word: &mut bool,
                    redirect: &mut bool,
                    commands: &mut Vec<Vec<String>>| {
        if *has_word {
            let w = std::mem::take(word);
            if *redirect {
                *redirect = false;
            } else if let Some(last) = commands.last_mut() {
                last.push(w);
            }
        }
        *has_word = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                has_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                has_word = true;
                word.extend(chars.next());
            }
            '#' if !has_word => break,
            ' ' | '\t' => end_word(&mut word, &mut has_word, &mut redirect, &mut commands),
            '|' | '&' | ';' => {
                end_word(&mut word, &mut has_word, &mut redirect, &mut commands);
                while chars.peek().is_some_and(|c| matches!(c, '|' | '&')) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            '<' if placeholder(&mut chars, &mut word) => has_word = true,
            '>' | '<' => {
                // `2>file`, `> file`, `>&2`: the redirection and its target.
                if has_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    has_word = false;
                }
                end_word(&mut word, &mut has_word, &mut redirect, &mut commands);
                while chars.peek().is_some_and(|c| matches!(c, '>' | '&')) {
                    chars.next();
                }
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                } else {
                    redirect = true;
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                // `$(...)` stands for one word.
                has_word = true;
                let mut depth = 0;
                word.push('$');
                for c in chars.by_ref() {
                    word.push(c);
                    match c {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            c => {
                has_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut has_word, &mut redirect, &mut commands);
    commands.retain(|c| !c.is_empty());
    commands
}

/// After a `<`: whether a placeholder follows (`<THREAD_ID>`), then taken
/// into `word` whole.
fn placeholder(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String) -> bool {
    let rest: String = chars.clone().collect();
    let Some(end) = rest.find('>') else {
        return false;
    };
    let name = &rest[..end];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
        return false;
    }
    word.push('<');
    word.push_str(name);
    word.push('>');
    for _ in 0..=end {
        chars.next();
    }
    true
}

/// The arguments a command passes to gantry: after `VAR=value`s, a
/// `gantry` (or a path ending in `/gantry`), or `cargo run ... --`.
pub(crate) fn gantry_args(command: &[String]) -> Option<Vec<String>> {
    let start = command
        .iter()
        .position(|w| !w.contains('=') || w.starts_with('-'))?;
    let command = &command[start..];
    let first = command.first()?;
    if first == "gantry" || first.ends_with("/gantry") {
        return Some(command[1..].to_vec());
    }
    if first == "cargo" && command.get(1).is_some_and(|w| w == "run") {
        let dashes = command.iter().position(|w| w == "--")?;
        return Some(command[dashes + 1..].to_vec());
    }
    None
}

#[test]
fn shell_lines_split_as_a_shell_splits_them() {
    assert_eq!(
        commands(
            r#"FOO=1 gantry exec "two words" 'x y' > out.txt 2>&1 && gantry threads list # note"#
        ),
        [
            vec!["FOO=1", "gantry", "exec", "two words", "x y"],
            vec!["gantry", "threads", "list"],
        ]
    );
    assert_eq!(
        commands("gantry serve --auth-token-file $(cat f) | tee log"),
        [
            vec!["gantry", "serve", "--auth-token-file", "$(cat f)"],
            vec!["tee", "log"],
        ]
    );
    assert_eq!(
        gantry_args(&commands("cargo run --release -p gantry-cli -- exec x")[0]),
        Some(vec!["exec".to_owned(), "x".to_owned()])
    );
    assert_eq!(gantry_args(&commands("systemctl start gantry")[0]), None);
    assert_eq!(
        commands("gantry threads show <THREAD_ID> < in"),
        [vec!["gantry", "threads", "show", "<THREAD_ID>"]]
    );
}

#[test]
fn every_gantry_command_in_the_docs_parses_with_the_cli() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (page, text) in pages() {
        for (n, line) in shell_lines(&text) {
            for command in commands(&line) {
                let Some(args) = gantry_args(&command) else {
                    continue;
                };
                checked += 1;
                let argv = std::iter::once("gantry".to_owned()).chain(args);
                if let Err(e) = Cli::try_parse_from(argv)
                    && !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                {
                    let why = e.render().to_string();
                    let why = why.lines().next().unwrap_or_default().to_owned();
                    failures.push(format!("{page}:{n}: `{}`: {why}", line.trim()));
                }
            }
        }
    }
    // A reader that finds no command would pass.
    assert!(
        checked > 50,
        "only {checked} gantry commands found in the docs"
    );
    assert!(
        failures.is_empty(),
        "doc lines the CLI refuses:\n- {}",
        failures.join("\n- ")
    );
}
