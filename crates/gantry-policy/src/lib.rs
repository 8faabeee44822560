//! Gantry's policy: one decision per tool call.
//!
//! [`decide`](fn@decide) folds a thread's
//! [`ThreadPolicy`](gantry_types::ThreadPolicy) and its [`SessionGrants`]
//! into a [`Verdict`]: allow, deny (with a reason for the model and the
//! rules that matched), or ask a human (with a timeout and what the timeout
//! turns into). It is pure: no I/O, no clock,
//! no filesystem (paths are resolved lexically against the workspace), no
//! async, so the engine calls it inline and tests need no runtime.
//!
//! # Precedence
//!
//! 1. **Permission rules, deny.** If enabled and any part of the call is
//!    denied (`deny` list, or a `default` of deny), the call is denied. Deny
//!    wins over everything below, session grants included, because rules
//!    can be tightened after a grant was given.
//! 2. **Session grants.** An identical request approved "for this session"
//!    is allowed.
//! 3. **Permission rules, ask/allow, then the approval policy.** Rules that
//!    ask make the call ask. A call every part of which an allow rule
//!    matches is allowed outright. Otherwise (rules disabled, or the
//!    default decided) the approval policy decides: `untrusted` asks unless
//!    the call is known safe (read-only built-ins, shell lines made of
//!    known read-only commands, see [`safe_commands`]); `never`,
//!    `on-request`, `on-failure` and `reject` allow (`on-failure` asks only
//!    after a failure: [`asks_on_failure`]).
//! 4. **Confirmation policy** (when enabled). A yolo lane, or a tool in
//!    `auto_approve_tools`, turns any ask from 3 into allow. A tool in
//!    `require_confirm_tools` asks (this beats `auto_approve_tools`; a yolo
//!    lane beats both). Any other `execute`-lane tool asks too: turning
//!    confirmation on means being asked about effects unless told
//!    otherwise; `query`-lane tools do not.
//! 5. **No one to ask.** An ask under approval `never` becomes a deny whose
//!    reason says approvals are off, as codex fails a command that would
//!    need approval. Under `reject { rules: true }`, asks from rules and
//!    from the confirmation policy are denied the same way. Any other ask
//!    carries the confirmation policy's `default_timeout_ms` and
//!    `timeout_action` (also when confirmation itself is disabled).
//!
//! # Shell commands
//!
//! A shell command line is parsed with a real bash parser
//! ([`shell::analyze`]) into every simple command it runs, including those
//! in `$(...)`, backticks, `<(...)`, subshells, functions, and those that
//! another program runs: `bash -c`, `eval`, `xargs`, `find -exec`, `env`,
//! `sudo`, `su -c`, `timeout`, `nice`, `flock`, `chroot`, `strace`,
//! `ionice`, `taskset`, `parallel`, `busybox` and the like (each wrapper's
//! options are parsed as the wrapper would), plus every file it redirects
//! output into. Every part must be allowed: one denied part denies the
//! call, one asked part asks. A redirection into a file is judged by
//! `Write(...)`/`Edit(...)` rules for that path. What the parser cannot see
//! through (a command name only known at run time, arithmetic, a syntax
//! error, a wrapper option it does not know, commands a wrapper reads from
//! its input such as `cat cmds | parallel`) is never allowed by a narrow
//! rule: it asks at least, or follows a `default` of deny.
//!
//! # Defaults
//!
//! `ThreadPolicy::default()` is rules disabled, approval `never`,
//! confirmation disabled: every call is allowed and nobody is asked, which
//! is how Gantry behaved before policies existed.

#![warn(missing_docs)]

mod approval;
mod check;
mod decide;
mod grants;
mod request;
pub mod rules;
pub mod safe_commands;
pub mod shell;
mod wrappers;

pub use approval::{Resolution, approval_request, resolve};
pub use check::check_permission;
pub use decide::{Verdict, asks_on_failure, decide};
pub use grants::SessionGrants;
pub use request::{THREAD_STATE_TOOLS, ToolRequest, is_known_safe, lane_of};
pub use rules::{Rule, RuleError};

/// Checks every rule of a rule set; the errors of those that do not parse.
/// A set-policy command should refuse a rule set with errors, because an
/// invalid allow rule allows nothing and an invalid deny or ask rule
/// matches every call of its tool.
pub fn validate_rules(rules: &gantry_types::PermissionRules) -> Vec<RuleError> {
    rules
        .allow
        .iter()
        .chain(&rules.ask)
        .chain(&rules.deny)
        .filter_map(|r| Rule::parse(r).err())
        .collect()
}
