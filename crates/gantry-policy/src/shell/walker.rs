//! The walk over bash's syntax tree: every simple command, redirection and
//! substitution becomes a part, and wrappers are looked through.

use brush_parser::ast;
use brush_parser::{Parser, ParserOptions, SourceInfo};

use super::{ShellAnalysis, ShellPart, ShellWord, SimpleCommand, WordKind, basename};
use crate::wrappers::{Inner, Wrapped, unwrap};

/// How deep `bash -c`, `eval`, `$(...)` and friends may nest before the
/// analysis gives up (and says opaque).
const MAX_DEPTH: usize = 12;
/// Longest command line analysed; longer ones are opaque. The parser is
/// recursive, so this and [`MAX_NESTING`] keep adversarial input from
/// exhausting the stack.
const MAX_LEN: usize = 64 * 1024;
/// Deepest bracket nesting analysed.
const MAX_NESTING: usize = 64;

/// Collects the parts of a command line while walking it.
pub(super) struct Walker {
    /// What the walk found so far.
    pub(super) out: ShellAnalysis,
    /// The parser's options, also for words parsed on their own.
    pub(super) options: ParserOptions,
}

impl Walker {
    /// Walks a whole command line.
    pub(super) fn run(command: &str) -> ShellAnalysis {
        let mut w = Walker {
            out: ShellAnalysis::default(),
            options: ParserOptions::default(),
        };
        w.source(command, 0);
        w.out
    }

    /// Records a part the analysis cannot see through.
    pub(super) fn opaque(&mut self, why: impl Into<String>) {
        self.out.parts.push(ShellPart::Opaque(why.into()));
    }

    /// Parses and walks a piece of shell source (the whole line, the inside
    /// of `$(...)`, the script of `bash -c`).
    pub(super) fn source(&mut self, src: &str, depth: usize) {
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
