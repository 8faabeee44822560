//! Splits a shell command line into the simple commands it runs and the
//! files it writes, with a real bash parser (`brush-parser`).
//!
//! Everything that runs is a part: each command of a list (`;`, `&&`, `||`,
//! `&`, newlines), of a pipeline, of a subshell, group, loop, `if`, `case` or
//! function body; the commands inside `$(...)`, backticks and `<(...)`; the
//! command a wrapper runs (`bash -c '...'`, `eval`, `env`, `timeout`, `sudo`,
//! `su -c`, `flock`, `chroot`, `strace`, `parallel`, `busybox`, `xargs`,
//! `find -exec`, ...; see the `wrappers` module). A redirection to a file is
//! a [`ShellPart::Write`]. Whatever the analysis cannot see through (a command
//! name only known at run time, arithmetic, a parse error, a wrapper option
//! it does not know, commands a wrapper reads from its input) is a
//! [`ShellPart::Opaque`], which the decision treats as "cannot prove safe".

use brush_parser::ast;
use brush_parser::word::WordPiece;
use brush_parser::{Parser, ParserOptions, SourceInfo};

use super::wrappers::{Inner, Wrapped, unwrap};

/// How deep `bash -c`, `eval`, `$(...)` and friends may nest before the
/// analysis gives up (and says opaque).
const MAX_DEPTH: usize = 12;
/// Longest command line analysed; longer ones are opaque. The parser is
/// recursive, so this and [`MAX_NESTING`] keep adversarial input from
/// exhausting the stack.
const MAX_LEN: usize = 64 * 1024;
/// Deepest bracket nesting analysed.
const MAX_NESTING: usize = 64;

/// One word of a command, after quote removal where that is static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellWord {
    /// The unquoted text if [`WordKind::Literal`]; the source text otherwise.
    pub text: String,
    /// Whether the text is what the command will see.
    pub kind: WordKind,
    /// Unquoted glob characters (`*`, `?`, `[`): the shell may replace the
    /// word with file names, which could look like options (`-delete`).
    pub glob: bool,
}

/// Whether a word's value is known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordKind {
    /// Quotes removed, nothing to expand: the text is the value.
    Literal,
    /// Starts with a tilde (`~`, `~/x`, `~user`): known shape, but the home
    /// directory is only known at run time.
    Tilde,
    /// Contains a parameter or command substitution: the value is only
    /// known at run time.
    Dynamic,
}

impl ShellWord {
    pub(super) fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            kind: WordKind::Literal,
            glob: false,
        }
    }
}

/// A simple command: `NAME=value ... argv[0] argv[1] ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Variable assignments before the command, as written (`FOO=1`).
    pub assignments: Vec<String>,
    /// The command and its arguments (empty for a bare assignment).
    pub argv: Vec<ShellWord>,
    /// A wrapper that only runs another command, which is a part of its own
    /// (`bash -c`, `eval`, `env`, `command`, `exec`, `nohup`, `nice`,
    /// `timeout`, `stdbuf`, `setsid`, `time`, `ionice`, `taskset`, `chrt`,
    /// `busybox`, ...). Deny and ask rules still apply to it; it needs no
    /// allow rule of its own. Wrappers that change the user, the root or
    /// the namespaces, or that write files (`sudo`, `su`, `chroot`, `flock`,
    /// `strace`, `script`) are not transparent.
    pub transparent: bool,
}

impl SimpleCommand {
    /// The command's name as written, if static.
    pub fn program(&self) -> Option<&str> {
        self.argv
            .first()
            .filter(|w| w.kind == WordKind::Literal)
            .map(|w| w.text.as_str())
    }

    /// The argument words' texts.
    pub fn words(&self) -> Vec<&str> {
        self.argv.iter().map(|w| w.text.as_str()).collect()
    }

    /// The command as one line: assignments, then words, space separated.
    pub fn text(&self) -> String {
        let mut out: Vec<&str> = self.assignments.iter().map(String::as_str).collect();
        out.extend(self.words());
        out.join(" ")
    }
}

/// One thing a command line does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellPart {
    /// A simple command that runs.
    Command(SimpleCommand),
    /// A file written through a redirection (`> f`, `>> f`, `&> f`, `>& f`);
    /// `None` when the name is only known at run time.
    Write(Option<String>),
    /// Something the analysis cannot see through; the text says what.
    Opaque(String),
}

/// The parts of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellAnalysis {
    /// Everything the command line runs or writes, in source order.
    pub parts: Vec<ShellPart>,
    /// Whether it changes directory (`cd`, `pushd`, `popd`, `env -C`), so that
    /// relative paths in later parts cannot be resolved statically.
    pub changes_dir: bool,
}

impl ShellAnalysis {
    /// Whether any part is opaque.
    pub fn has_opaque(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, ShellPart::Opaque(_)))
    }
}

/// Splits `command` (as given to `bash -lc`) into its parts.
pub fn analyze(command: &str) -> ShellAnalysis {
    let mut w = Walker {
        out: ShellAnalysis::default(),
        options: ParserOptions::default(),
    };
    w.source(command, 0);
    w.out
}

struct Walker {
    out: ShellAnalysis,
    options: ParserOptions,
}

impl Walker {
    fn opaque(&mut self, why: impl Into<String>) {
        self.out.parts.push(ShellPart::Opaque(why.into()));
    }

    /// Parses and walks a piece of shell source (the whole line, the inside
    /// of `$(...)`, the script of `bash -c`).
    fn source(&mut self, src: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return self.opaque("nested too deeply");
        }
        if src.len() > MAX_LEN || nesting(src) > MAX_NESTING {
            return self.opaque("command too long or nested too deeply to analyse");
        }
        let mut parser = Parser::new(src.as_bytes(), &self.options, &SourceInfo::default());
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(e) => self.opaque(format!("shell syntax not understood: {e}")),
        }
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            for (_, pipeline) in and_or {
                for cmd in &pipeline.seq {
                    self.command(cmd, depth);
                }
            }
        }
    }

    fn command(&mut self, cmd: &ast::Command, depth: usize) {
        match cmd {
            ast::Command::Simple(simple) => self.simple(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                if let Some(list) = redirects {
                    for r in &list.0 {
                        self.redirect(r, depth);
                    }
                }
            }
            // The body is analysed where it is defined: calling the function
            // later runs a command by the function's name, which no allow
            // rule will mistake for something else.
            ast::Command::Function(def) => {
                self.compound(&def.body.0, depth);
                if let Some(list) = &def.body.1 {
                    for r in &list.0 {
                        self.redirect(r, depth);
                    }
                }
            }
            ast::Command::ExtendedTest(test) => self.extended_test(&test.expr, depth),
        }
    }

    fn compound(&mut self, cmd: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match cmd {
            // Bash evaluates variable values inside arithmetic as arithmetic
            // again, and array subscripts there expand `$(...)`: not provable.
            C::Arithmetic(_) | C::ArithmeticForClause(_) => self.opaque("arithmetic command"),
            C::BraceGroup(g) => self.list(&g.list, depth),
            C::Subshell(s) => self.list(&s.list, depth),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w, depth);
                }
                self.list(&f.body.list, depth);
            }
            C::CaseClause(c) => {
                self.word(&c.value, depth);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p, depth);
                    }
                    if let Some(body) = &item.cmd {
                        self.list(body, depth);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, depth);
                self.list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, depth);
                    }
                    self.list(&e.body, depth);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, depth: usize) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a, depth);
                self.extended_test(b, depth);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a, depth),
            E::UnaryTest(_, w) => {
                self.word(w, depth);
            }
            E::BinaryTest(pred, a, b) => {
                // `-eq` and friends evaluate both sides as arithmetic, which
                // can run code hidden in a variable's value.
                use ast::BinaryPredicate as P;
                if matches!(
                    pred,
                    P::ArithmeticEqualTo
                        | P::ArithmeticNotEqualTo
                        | P::ArithmeticLessThan
                        | P::ArithmeticLessThanOrEqualTo
                        | P::ArithmeticGreaterThan
                        | P::ArithmeticGreaterThanOrEqualTo
                ) {
                    self.opaque("arithmetic comparison in [[ ]]");
                }
                self.word(a, depth);
                self.word(b, depth);
            }
        }
    }

    fn simple(&mut self, cmd: &ast::SimpleCommand, depth: usize) {
        let mut assignments = Vec::new();
        let mut argv = Vec::new();
        let mut redirects = Vec::new();
        let items = cmd
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(Item::Prefix)
            .chain(cmd.word_or_name.iter().map(Item::Name))
            .chain(cmd.suffix.iter().flat_map(|s| s.0.iter()).map(Item::Prefix));
        for item in items {
            match item {
                Item::Name(w) => argv.push(self.word(w, depth)),
                Item::Prefix(ast::CommandPrefixOrSuffixItem::Word(w)) => {
                    argv.push(self.word(w, depth))
                }
                Item::Prefix(ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w)) => {
                    let word = self.word(w, depth);
                    // After the command name, `a=b` is just an argument
                    // (`export a=b`, `make CC=gcc`).
                    if argv.is_empty() {
                        assignments.push(word.text);
                    } else {
                        argv.push(word);
                    }
                }
                Item::Prefix(ast::CommandPrefixOrSuffixItem::IoRedirect(r)) => redirects.push(r),
                Item::Prefix(ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub)) => {
                    self.list(&sub.list, depth)
                }
            }
        }
        for r in redirects {
            self.redirect(r, depth);
        }
        if argv.is_empty() && assignments.is_empty() {
            // Redirections alone (`> f`): the writes are already parts.
            return;
        }
        self.command_parts(
            SimpleCommand {
                assignments,
                argv,
                transparent: false,
            },
            depth,
        );
    }

    /// Pushes a simple command, after the commands it wraps.
    fn command_parts(&mut self, mut cmd: SimpleCommand, depth: usize) {
        if let Some(first) = cmd.argv.first()
            && (first.kind != WordKind::Literal || first.glob)
        {
            return self.opaque(format!(
                "command name only known at run time: {}",
                first.text
            ));
        }
        if depth > MAX_DEPTH {
            return self.opaque("nested too deeply");
        }
        let name = cmd.program().map(basename).unwrap_or_default().to_owned();
        if matches!(name.as_str(), "cd" | "pushd" | "popd") {
            self.out.changes_dir = true;
        }
        let words: Vec<ShellWord> = cmd.argv.iter().skip(1).cloned().collect();
        match unwrap(&name, &words) {
            Wrapped::No => {}
            Wrapped::Opaque(why) => self.opaque(why),
            Wrapped::Runs {
                inner,
                transparent,
                changes_dir,
            } => {
                self.out.changes_dir |= changes_dir;
                cmd.transparent = transparent;
                for run in inner {
                    match run {
                        Inner::Argv { assignments, argv } => self.command_parts(
                            SimpleCommand {
                                assignments,
                                argv,
                                transparent: false,
                            },
                            depth + 1,
                        ),
                        Inner::Script(source) => self.source(&source, depth + 1),
                    }
                }
            }
        }
        self.out.parts.push(ShellPart::Command(cmd));
    }

    fn redirect(&mut self, r: &ast::IoRedirect, depth: usize) {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite);
                match target {
                    T::Filename(w) => {
                        let word = self.word(w, depth);
                        if writes {
                            self.write(word);
                        }
                    }
                    T::Fd(_) => {}
                    T::ProcessSubstitution(_, sub) => self.list(&sub.list, depth),
                    T::Duplicate(w) => {
                        let word = self.word(w, depth);
                        let is_fd = word.kind == WordKind::Literal
                            && word
                                .text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        // `>&file` sends stdout and stderr to a file.
                        if !is_fd && matches!(kind, K::DuplicateOutput) {
                            self.write(word);
                        }
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                // An unquoted delimiter means the body is expanded: `$(...)`
                // in it runs. Quotes in a body are literal, so the word
                // parser cannot be trusted with it; be strict instead.
                let body = &doc.doc.value;
                if doc.requires_expansion && (body.contains("$(") || body.contains('`')) {
                    self.opaque("command substitution in a here-document");
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(w, depth);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let word = self.word(w, depth);
                self.write(word);
            }
        }
    }

    fn write(&mut self, target: ShellWord) {
        match target.kind {
            WordKind::Literal => {
                if !matches!(
                    target.text.as_str(),
                    "/dev/null" | "/dev/stdout" | "/dev/stderr"
                ) {
                    self.out.parts.push(ShellPart::Write(Some(target.text)));
                }
            }
            WordKind::Tilde | WordKind::Dynamic => self.out.parts.push(ShellPart::Write(None)),
        }
    }

    /// Resolves a word's static value; the commands its substitutions run
    /// become parts.
    fn word(&mut self, w: &ast::Word, depth: usize) -> ShellWord {
        match brush_parser::word::parse(&w.value, &self.options) {
            Ok(pieces) => {
                let mut text = String::new();
                let mut kind = WordKind::Literal;
                let mut glob = false;
                for (i, p) in pieces.iter().enumerate() {
                    let raw = w.value.get(p.start_index..p.end_index).unwrap_or_default();
                    let k = self.piece(&p.piece, raw, false, &mut glob, &mut text, depth);
                    kind = match (kind, k, i) {
                        (_, WordKind::Dynamic, _) | (WordKind::Dynamic, _, _) => WordKind::Dynamic,
                        (_, WordKind::Tilde, 0) => WordKind::Tilde,
                        (WordKind::Tilde, _, _) => WordKind::Tilde,
                        _ => WordKind::Literal,
                    };
                }
                if kind == WordKind::Literal {
                    ShellWord { text, kind, glob }
                } else {
                    ShellWord {
                        text: w.value.clone(),
                        kind,
                        glob,
                    }
                }
            }
            Err(e) => {
                self.opaque(format!("word not understood: {e}"));
                ShellWord {
                    text: w.value.clone(),
                    kind: WordKind::Dynamic,
                    glob: false,
                }
            }
        }
    }

    /// Appends a word piece's static value to `text`; returns its kind.
    #[allow(clippy::too_many_arguments)]
    fn piece(
        &mut self,
        piece: &WordPiece,
        raw: &str,
        quoted: bool,
        glob: &mut bool,
        text: &mut String,
        depth: usize,
    ) -> WordKind {
        match piece {
            WordPiece::Text(s) if !quoted => {
                // `{rm,-rf,/}` expands to three words: not one static word.
                if is_brace_expansion(s) {
                    return WordKind::Dynamic;
                }
                *glob |= s.contains(['*', '?', '[', '(']);
                text.push_str(s);
                WordKind::Literal
            }
            WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => {
                text.push_str(s);
                WordKind::Literal
            }
            WordPiece::EscapeSequence(s) => {
                let unescaped = s.strip_prefix('\\').unwrap_or(s);
                // A backslash-newline is a line continuation: nothing.
                if unescaped != "\n" {
                    text.push_str(unescaped);
                }
                WordKind::Literal
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                let mut kind = WordKind::Literal;
                for p in inner {
                    if self.piece(&p.piece, raw, true, glob, text, depth) != WordKind::Literal {
                        kind = WordKind::Dynamic;
                    }
                }
                kind
            }
            WordPiece::TildePrefix(user) => {
                text.push('~');
                text.push_str(user);
                WordKind::Tilde
            }
            // `$'\x72m'` could be decoded, but nothing needs it: dynamic.
            WordPiece::AnsiCQuotedText(_) => WordKind::Dynamic,
            WordPiece::ParameterExpansion(expr) => {
                // `${x:-$(cmd)}` keeps the default as unparsed text: any
                // nested expansion is not provable. Parameter names never
                // contain `$` or a backtick, so the debug form tells.
                let body = format!("{expr:?}");
                if body.contains('$') || body.contains('`') {
                    self.opaque(format!("nested expansion in {raw}"));
                }
                WordKind::Dynamic
            }
            WordPiece::CommandSubstitution(src) | WordPiece::BackquotedCommandSubstitution(src) => {
                self.source(src, depth + 1);
                WordKind::Dynamic
            }
            WordPiece::ArithmeticExpression(_) => {
                self.opaque(format!("arithmetic expansion {raw}"));
                WordKind::Dynamic
            }
        }
    }
}

/// Whether unquoted text holds a brace expansion (`{a,b}`, `{1..3}`).
fn is_brace_expansion(s: &str) -> bool {
    s.find('{').is_some_and(|open| {
        let rest = &s[open..];
        rest.contains('}') && (rest.contains(',') || rest.contains(".."))
    })
}

/// A simple command's pieces in source order.
enum Item<'a> {
    Name(&'a ast::Word),
    Prefix(&'a ast::CommandPrefixOrSuffixItem),
}

/// The deepest nesting of brackets and backticks, counted without regard to
/// quoting (over-counting only makes the check stricter).
fn nesting(src: &str) -> usize {
    let (mut depth, mut max, mut ticks) = (0usize, 0usize, 0usize);
    for c in src.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => ticks += 1,
            _ => {}
        }
        max = max.max(depth + ticks / 2);
    }
    max
}

/// The last path component: `/usr/bin/env` is `env`.
pub fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(src: &str) -> Vec<String> {
        analyze(src)
            .parts
            .iter()
            .map(|p| match p {
                ShellPart::Command(c) => c.text(),
                ShellPart::Write(Some(p)) => format!("> {p}"),
                ShellPart::Write(None) => "> ?".into(),
                ShellPart::Opaque(_) => "?".into(),
            })
            .collect()
    }

    #[test]
    fn lists_and_pipelines_split() {
        assert_eq!(commands("git status; rm -rf ~"), ["git status", "rm -rf ~"]);
        assert_eq!(commands("a && b || c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(commands("a\nb"), ["a", "b"]);
    }

    #[test]
    fn quotes_are_removed() {
        assert_eq!(commands(r#"'rm' -rf "x y""#), ["rm -rf x y"]);
        assert_eq!(commands(r"\rm -rf /"), ["rm -rf /"]);
        assert_eq!(commands(r#"r''m x"#), ["rm x"]);
    }

    #[test]
    fn substitutions_are_parts() {
        assert_eq!(
            commands("echo $(rm -rf /)"),
            ["rm -rf /", "echo $(rm -rf /)"]
        );
        assert_eq!(commands("echo `rm -rf /`"), ["rm -rf /", "echo `rm -rf /`"]);
        assert_eq!(commands("diff <(rm a) b"), ["rm a", "diff b"]);
        assert_eq!(commands("echo \"$(rm x)\""), ["rm x", "echo \"$(rm x)\""]);
    }

    #[test]
    fn redirections_are_writes() {
        assert_eq!(
            commands("git status > /etc/passwd"),
            ["> /etc/passwd", "git status"]
        );
        assert_eq!(commands("ls 2>/dev/null >&2"), ["ls"]);
        assert_eq!(commands("ls > $OUT"), ["> ?", "ls"]);
        assert_eq!(commands("ls &> log"), ["> log", "ls"]);
    }

    #[test]
    fn wrappers_expose_inner_commands() {
        assert_eq!(
            commands("bash -c 'rm -rf /'"),
            ["rm -rf /", "bash -c rm -rf /"]
        );
        assert_eq!(commands("eval \"rm -rf /\""), ["rm -rf /", "eval rm -rf /"]);
        assert_eq!(commands("env A=1 rm x"), ["A=1 rm x", "env A=1 rm x"]);
        assert_eq!(commands("xargs rm"), ["rm", "xargs rm"]);
        assert_eq!(
            commands("find . -exec rm {} \\;"),
            ["rm {}", "find . -exec rm {} ;"]
        );
        assert_eq!(commands("timeout 5 rm x"), ["rm x", "timeout 5 rm x"]);
        assert_eq!(commands("sudo -u root rm x"), ["rm x", "sudo -u root rm x"]);
        // Options missing their value must not index past the end.
        for cmd in [
            "sudo -u",
            "timeout -s",
            "watch -n",
            "nice -n",
            "env -u",
            "xargs -I",
        ] {
            assert_eq!(commands(cmd).last().map(String::as_str), Some(cmd));
        }
    }

    #[test]
    fn unprovable_is_opaque() {
        assert!(analyze("$CMD x").has_opaque());
        assert!(analyze("echo $((1+2))").has_opaque());
        assert!(analyze("bash -c \"$X\"").has_opaque());
        assert!(analyze("echo 'unterminated").has_opaque());
        assert!(analyze("cat <<EOF\n$(rm -rf /)\nEOF\n").has_opaque());
        assert!(!analyze("cat <<'EOF'\n$(rm -rf /)\nEOF\n").has_opaque());
        let deep = format!("{}x{}", "(".repeat(500), ")".repeat(500));
        assert!(analyze(&deep).has_opaque());
    }

    #[test]
    fn cd_is_noticed() {
        assert!(analyze("cd /etc && echo x > passwd").changes_dir);
        assert!(!analyze("echo x > passwd").changes_dir);
    }

    /// The parser is third-party code and release builds abort on panic:
    /// make sure hostile input of shell punctuation does not panic it.
    #[test]
    fn random_input_never_panics() {
        let alphabet: Vec<char> = "ab $(){}[]'\"`\\;|&<>\n#=*?~!-019cdEOF".chars().collect();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..5000 {
            let len = (next() % 24) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let r = std::panic::catch_unwind(|| analyze(&s));
            assert!(r.is_ok(), "panic on {s:?}");
        }
    }
}
