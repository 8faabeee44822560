//! A wrapper's options, parsed as `getopt_long` would parse them.

use crate::shell::{ShellWord, WordKind};

/// A wrapper's option syntax, as `getopt_long` sees it. Parsing is strict:
/// an option not listed could take a value, which would then be mistaken
/// for the command, so it makes the wrapper opaque instead.
#[derive(Clone, Copy)]
pub(super) struct Getopt {
    /// Short options without a value.
    pub(super) flags: &'static str,
    /// Short options with a value (`-o FILE`, `-oFILE`).
    pub(super) values: &'static str,
    /// Short options with an optional value, attached only (`-dVALUE`).
    pub(super) optional: &'static str,
    /// Long options without a value, or with one only after `=`; space
    /// separated.
    pub(super) long_flags: &'static str,
    /// Long options with a value (`--output FILE`, `--output=FILE`); space
    /// separated.
    pub(super) long_values: &'static str,
    /// Every long option takes its value after `=` only (`firejail`,
    /// `valgrind`), so any `--name[=value]` is one word.
    pub(super) any_long: bool,
    /// `-5`, `--10`: `nice`'s old adjustment syntax.
    pub(super) numbers: bool,
    /// Options may follow operands (GNU getopt without `+`).
    pub(super) permute: bool,
}

/// No options but `--help` and `--version`; what specs start from.
pub(super) const GETOPT: Getopt = Getopt {
    flags: "",
    values: "",
    optional: "",
    long_flags: "help version",
    long_values: "",
    any_long: false,
    numbers: false,
    permute: false,
};

/// The options given to a wrapper and its operands.
pub(super) struct Parsed {
    /// Option name (one character, or a long name) and value.
    pub(super) opts: Vec<(String, Option<ShellWord>)>,
    /// The words after the options (all non-options when permuting).
    pub(super) operands: Vec<ShellWord>,
}

impl Parsed {
    /// Whether any of these options was given.
    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    /// The last value of an option.
    pub(super) fn value(&self, names: &[&str]) -> Option<&ShellWord> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }
}

impl Getopt {
    /// Splits `args` into options and operands; an option it does not
    /// know, or a word only known at run time, is an error saying so.
    pub(super) fn parse(&self, name: &str, args: &[ShellWord]) -> Result<Parsed, String> {
        let mut opts = Vec::new();
        let mut operands = Vec::new();
        let mut i = 0;
        while let Some(w) = args.get(i) {
            i += 1;
            if w.kind != WordKind::Literal {
                // A dynamic word might be an option or the command.
                return Err(format!("{name} with words only known at run time"));
            }
            let t = w.text.as_str();
            if t == "--" {
                break;
            }
            if t == "-" || !t.starts_with('-') {
                operands.push(w.clone());
                if self.permute {
                    continue;
                }
                break;
            }
            if self.numbers
                && t.trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit())
            {
                opts.push(("n".to_owned(), Some(ShellWord::literal(t))));
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (key, attached) = match long.split_once('=') {
                    Some((k, v)) => (k, Some(ShellWord::literal(v))),
                    None => (long, None),
                };
                if has_word(self.long_values, key) {
                    let value = match attached {
                        Some(v) => v,
                        None => match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            // The program refuses a missing value: nothing runs.
                            None => return Ok(Parsed { opts, operands }),
                        },
                    };
                    opts.push((key.to_owned(), Some(value)));
                } else if self.any_long || has_word(self.long_flags, key) {
                    opts.push((key.to_owned(), attached));
                } else {
                    return Err(format!("{name} option --{key} not understood"));
                }
                continue;
            }
            let cluster = t.get(1..).unwrap_or_default();
            for (pos, c) in cluster.char_indices() {
                let rest = cluster.get(pos + c.len_utf8()..).unwrap_or_default();
                if self.flags.contains(c) {
                    opts.push((c.to_string(), None));
                } else if self.optional.contains(c) {
                    opts.push((c.to_string(), Some(ShellWord::literal(rest))));
                    break;
                } else if self.values.contains(c) {
                    let value = if !rest.is_empty() {
                        ShellWord::literal(rest)
                    } else {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            None => return Ok(Parsed { opts, operands }),
                        }
                    };
                    opts.push((c.to_string(), Some(value)));
                    break;
                } else {
                    return Err(format!("{name} option -{c} not understood"));
                }
            }
        }
        operands.extend(args.get(i..).unwrap_or_default().iter().cloned());
        Ok(Parsed { opts, operands })
    }
}

fn has_word(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}
