//! `gantry`: serve coding agents over their protocols, run them headless,
//! inspect their threads.

mod acp;
mod args;
mod codewhale;
mod completions;
mod config;
mod control_plane;
#[cfg(test)]
mod docs_commands;
mod exec;
mod exec_json;
mod help;
mod http;
mod jobs;
mod listen;
mod model;
mod pando;
mod render;
mod rome;
mod runner;
mod serve;
mod setup;
mod signals;
mod store;
mod threads;
mod trajectory;

use std::process::ExitCode;

use crate::args::{Command, LogFormat};

fn main() -> ExitCode {
    harden_process();
    let cli = help::parse();
    store::warn_of_passwords_in_args();
    gantry_tools::sandbox::child_env::pass(cli.global.pass_env.iter().cloned());
    // The daemons say when they connect and lose their peers.
    let default_log = match cli.command {
        Command::Runner(_) | Command::ControlPlane(_) => {
            "warn,proto_runner_control=info,gantry_control_plane=info"
        }
        _ => "warn",
    };
    init_tracing(default_log, cli.global.log_format);
    // Two worker threads: the engine is I/O bound, and a small runtime keeps
    // start-up fast and memory low.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Exec(args) => exec::run(cli.global, args).await,
            Command::Serve(args) => serve::run(cli.global, args).await,
            Command::Runner(args) => runner::run(cli.global, args).await,
            Command::ControlPlane(args) => match setup::data_dir_path(&cli.global) {
                Ok(dir) => control_plane::run(dir, args).await,
                Err(e) => Err(e),
            },
            Command::Codewhale(args) => codewhale::run(cli.global, args).await,
            Command::Acp(args) => acp::run(cli.global, args).await,
            Command::Threads(args) => threads::run(cli.global, args).await,
            Command::Jobs(args) => jobs::run(cli.global, args).await,
            Command::Tokens(command) => http::run(&cli.global, command),
            Command::Completions(args) => completions::run(&args),
        }
    });
    // Do not wait for tasks still blocked (e.g. a dropped model stream).
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

/// Makes the process non-dumpable before anything else runs: processes it
/// starts (the agent's commands, MCP and language servers), though running
/// as the same user, can then neither read its `/proc/<pid>/environ` (the
/// keys it was started with) or `/proc/<pid>/mem`, nor ptrace it. Root's
/// CAP_SYS_PTRACE overrides this; sandboxed commands are kept out anyway by
/// Landlock, which denies ptrace-style access to processes outside the
/// sandbox.
fn harden_process() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        // Not fatal: the sandbox and the environment filter still hold.
        eprintln!("gantry: warning: cannot make the process non-dumpable: {e}");
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    // One line: the chain of causes, joined.
    let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
    eprintln!("gantry: error: {}", chain.join(": "));
    ExitCode::from(2)
}

fn init_tracing(default: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("GANTRY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs
            // Colours only for a terminal, not for log files.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .without_time()
            .init(),
        // A collector wants the time, the source and the turn's ids (the
        // `turn` span's fields) as fields of each record.
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}
