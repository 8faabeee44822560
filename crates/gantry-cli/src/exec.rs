//! `gantry exec`: one turn, headless.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use std::sync::Arc;

use gantry_core::{
    CreateThread, EngineBuilder, EngineConfig, EngineEventKind, EngineEventNotice, IfBusy,
    Notification, Providers,
};
use gantry_tools::SandboxSupport;
use gantry_types::{EventPayload, ItemKind, ThreadId, TurnStatus};
use gantry_types::{SandboxMode, ThreadPolicy};

use crate::args::{ExecArgs, Global};
use crate::model::Chosen;
use crate::render::LiveView;
use crate::setup::DataDir;

mod report;

use report::Reporter;

/// Examples shown under `gantry exec --help`; the last needs neither a key
/// nor a network, so a newcomer can run it first (the no-key error points
/// at it).
pub(crate) const EXAMPLES: &str = "\
Examples:
  # An OpenAI model, with the key in OPENAI_API_KEY:
  gantry exec --model gpt-4.1 \"add a --verbose flag to the CLI\"

  # A local OpenAI-compatible server (Ollama), no key:
  gantry exec --base-url http://localhost:11434/v1 --model qwen3-coder \"explain src/main.rs\"

  # Go on with a thread (ids: gantry threads list):
  gantry exec --resume THREAD_ID \"now add tests for it\"

  # No key, no network: a scripted model answers from a file.
  echo '{\"steps\": [{\"reply\": {\"text\": \"Hello!\"}}]}' > hello.json
  gantry exec --model scripted:hello.json \"say hello\"";

/// Runs the turn and maps its end to an exit code.
/// With `--report`, the report is written however the run ends.
pub(crate) async fn run(global: Global, args: ExecArgs) -> Result<ExitCode> {
    let mut reporter = Reporter::start();
    let result = run_reported(&global, &args, &mut reporter).await;
    if let Some(path) = &args.report {
        let written = report::write(path, &reporter.report(&result));
        // The run's own error matters more than the report's.
        if let (Ok(_), Err(e)) = (&result, written) {
            return Err(e.context("cannot write the run report"));
        }
    }
    result
}

async fn run_reported(
    global: &Global,
    args: &ExecArgs,
    reporter: &mut Reporter,
) -> Result<ExitCode> {
    // The config first: its errors are the user's to fix before anything runs.
    let mut file = crate::config::load(global.config.as_deref())?;
    // So are `OTEL_*` variables that ask for what cannot be.
    let traces = gantry_telemetry::Tracing::from_env()?;
    file.retry.max_retries = args.max_retries;
    // A new thread's first model request needs nothing stored: the store
    // opens meanwhile (a new data dir's is made from nothing).
    let data = DataDir::open_in_background(global, &args.store).await?;
    let ran = turn(global, args, &data, file, reporter, traces.as_ref()).await;
    if let Some(traces) = traces {
        // The turn's spans, all built by now, leave before the process.
        traces.shutdown().await;
    }
    // However the run ended, the store is not left half made; a store that
    // could not be opened is why the run failed, whatever failed first.
    data.opened().await?;
    ran
}

/// Runs the turn on the data dir's store.
async fn turn(
    global: &Global,
    args: &ExecArgs,
    data: &DataDir,
    file: gantry_core::ProvidersConfig,
    reporter: &mut Reporter,
    traces: Option<&gantry_telemetry::Tracing>,
) -> Result<ExitCode> {
    let registry = Arc::new(Providers::load(data.store.clone(), file).await?);
    let resume = args.resume.as_deref().map(ThreadId::from);
    let chosen = match &resume {
        Some(id) => Chosen::stored(
            data.store
                .thread(id)
                .await?
                .with_context(|| format!("thread {id} not found in {}", data.store_name))?
                .model,
        ),
        None => Chosen::new(args.model.as_deref(), &registry, global.config.as_deref()),
    };
    let models = crate::model::setup(&chosen, args, registry)?;
    let model = chosen.id;
    reporter.model = Some(model.clone());
    let config = EngineConfig {
        max_rounds: config_max_rounds(args),
        default_model: model.clone(),
        reasoning: args.reasoning.clone(),
        data_dir: Some(data.path.clone()),
        sandbox_protected: crate::setup::sandbox_protected(global, Some(data)),
        shell_snapshot: !global.no_shell_snapshot,
        shell_snapshot_ahead: !global.no_shell_snapshot,
        trusted_workspaces: crate::config::trusted_workspaces(global)?,
        // Exported traces go on into the provider's.
        propagate_own_traces: traces.is_some(),
        ..EngineConfig::default()
    };
    let engine = match &models.registry {
        Some(registry) => {
            EngineBuilder::new(data.store.clone(), models.resolver.clone())
                .providers(registry.clone())
                .config(config)
                .start()
                .await?
        }
        None => data.engine(models.resolver.clone(), config).await?,
    };

    let sandbox = sandbox_mode(&args.sandbox);
    // Never pretend: a sandbox the kernel cannot enforce is an error.
    let support = SandboxSupport::probe();
    support.check(sandbox).map_err(|e| {
        anyhow::anyhow!("{e}; pass --sandbox danger-full-access to run without a sandbox")
    })?;
    warn_without_namespaces(&support, sandbox);
    let workspace = match &args.cwd {
        Some(dir) => Some(dir.clone()),
        None => std::env::current_dir().ok(),
    };
    check_data_dir_exposure(
        &support,
        sandbox,
        &data.path,
        workspace.as_deref(),
        global.allow_exposed_data_dir,
    )?;
    let resumed = resume.is_some();
    let mut engine_events = engine.feeds().engine_events();
    let (thread, turn_id) = match resume {
        Some(id) => {
            let thread = engine.threads().read(&id).await?.thread.clone();
            let mut policy = thread.policy.clone();
            policy.sandbox = sandbox;
            engine.safety().set_policy(&id, policy).await?;
            // Nobody here can answer the agent's questions.
            let turn = engine
                .turns()
                .send_unattended(&id, args.prompt.as_str().into(), IfBusy::Reject)
                .await?;
            (thread, turn)
        }
        None => {
            let cwd = match &args.cwd {
                Some(dir) => {
                    // An explicit workspace that does not exist yet is made,
                    // so `-C $(mktemp -u)`-style scratch runs just work.
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create workspace {}", dir.display()))?;
                    dir.clone()
                }
                None => std::env::current_dir().context("cannot read the current directory")?,
            };
            // One step, so the first model request does not wait for the
            // new thread to be stored.
            engine
                .threads()
                .create_and_send(
                    CreateThread {
                        cwd,
                        model: Some(model),
                        instructions: args.instructions.clone(),
                        policy: ThreadPolicy {
                            sandbox,
                            ..ThreadPolicy::default()
                        },
                        ..CreateThread::default()
                    },
                    args.prompt.clone().into(),
                )
                .await?
        }
    };
    reporter.thread_id = Some(thread.id.as_str().to_owned());
    reporter.turn_id = Some(turn_id.as_str().to_owned());
    let mut view = LiveView::new(args.json);
    view.thread_started(&thread.id, resumed);
    // From the first event after the thread as it was before this turn:
    // the turn's events are replayed if they came first.
    let mut feed = engine
        .feeds()
        .follow(&thread.id, thread.last_seq + 1)
        .await?;

    // Built from the turn's own feed, so every span exists once it ends.
    let mut recorder = traces.map(gantry_telemetry::Tracing::recorder);
    let mut interrupted = false;
    let mut final_answer = String::new();
    // Set while the store refuses commits: the turn's last events may then
    // never reach the feed, so Ctrl-C must not wait for them.
    let mut store_failing: Option<String> = None;
    // One listener for the whole turn: a Ctrl-C that arrives while the loop
    // is busy (not waiting in `select!`) is kept, not lost.
    let mut ctrl_c = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("cannot listen for Ctrl-C")?;
    let store_opened = data.opened();
    tokio::pin!(store_opened);
    let mut store_open = false;
    let status = loop {
        let next = tokio::select! {
            n = feed.next() => n?,
            // A store that cannot be opened ends the run: nothing of it
            // could be saved.
            opened = &mut store_opened, if !store_open => {
                opened?;
                store_open = true;
                continue;
            }
            Some(EngineEventNotice::Event(e)) = engine_events.recv() => {
                if let EngineEventKind::StoreHealth { error } = e.kind {
                    match &error {
                        Some(cause) => eprintln!("gantry: the event log cannot be saved ({cause}); retrying, Ctrl-C to give up"),
                        None => eprintln!("gantry: the event log is saved again"),
                    }
                    store_failing = error;
                }
                continue;
            }
            // One branch for Ctrl-C: two would both wake on one signal.
            _ = ctrl_c.recv(), if !interrupted || store_failing.is_some() => {
                if let Some(cause) = &store_failing {
                    eprintln!("gantry: interrupted; the turn's last events are not saved: {cause}");
                    return Ok(ExitCode::from(130));
                }
                interrupted = true;
                view.note("interrupting...");
                let engine = engine.clone();
                let id = thread.id.clone();
                // Keep rendering while the turn winds down.
                tokio::spawn(async move { engine.turns().interrupt(&id).await });
                continue;
            }
        };
        let Some(n) = next else {
            anyhow::bail!("the engine stopped before the turn ended");
        };
        view.show(&n);
        if let (Some(recorder), Notification::Event(e)) = (&mut recorder, &n) {
            recorder.observe(&engine, e).await;
        }
        if let Notification::Event(e) = &n {
            match &e.payload {
                EventPayload::ItemCompleted { item } if item.turn_id == turn_id => {
                    if let ItemKind::AgentMessage { text } = &item.kind {
                        final_answer = text.clone();
                    }
                }
                EventPayload::TurnCompleted {
                    turn_id: done,
                    status,
                    ..
                } if *done == turn_id => break *status,
                _ => {}
            }
        }
    };
    engine.flush().await?;
    let ended = engine.threads().read(&thread.id).await?;
    if let Some(turn) = ended.turns.iter().find(|t| t.turn.id == turn_id) {
        view.summary(&turn.turn, &ended.thread);
    }
    reporter.turn_ended(&ended, config_max_rounds(args));
    if let Some(path) = &args.trajectory {
        let json = crate::trajectory::to_json(&crate::trajectory::of(&engine, &thread.id).await?)?;
        crate::trajectory::write_atomic(path, &json).context("cannot write the trajectory")?;
        reporter.trajectory = Some(path.clone());
    }
    if !args.json && status == TurnStatus::Completed {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", final_answer.trim_end()).context("cannot write to stdout")?;
    }
    Ok(match status {
        TurnStatus::Completed => ExitCode::SUCCESS,
        TurnStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    })
}

/// The round limit the engine runs with (`--max-rounds`, at least 1).
fn config_max_rounds(args: &ExecArgs) -> u32 {
    args.max_rounds.max(1)
}

pub(crate) fn sandbox_mode(name: &str) -> SandboxMode {
    match name {
        "read-only" => SandboxMode::ReadOnly,
        "danger-full-access" => SandboxMode::DangerFullAccess,
        _ => SandboxMode::WorkspaceWrite,
    }
}

/// Says once, at start, that sandboxed commands get no namespaces of their
/// own here (they see the machine's processes and share `/tmp`).
pub(crate) fn warn_without_namespaces(support: &SandboxSupport, mode: SandboxMode) {
    if let (Some(why), true) = (&support.namespace_problem, support.problem.is_none())
        && !matches!(mode, SandboxMode::DangerFullAccess)
    {
        eprintln!(
            "gantry: warning: sandboxed commands cannot have PID and mount namespaces of their \
             own here ({why}): they stay confined by Landlock and seccomp, but see other \
             processes under /proc and share /tmp"
        );
    }
}

/// Where sandboxed commands get no namespaces, a data dir inside a writable
/// root (the workspace, the temp dir) is readable to them, keys and all:
/// refused unless `allowed` (`--allow-exposed-data-dir`). With namespaces
/// it is covered or out of view, and nothing needs refusing.
pub(crate) fn check_data_dir_exposure(
    support: &SandboxSupport,
    mode: SandboxMode,
    data_dir: &std::path::Path,
    workspace: Option<&std::path::Path>,
    allowed: bool,
) -> Result<()> {
    let Some(why) = &support.namespace_problem else {
        return Ok(());
    };
    if allowed || support.problem.is_some() || matches!(mode, SandboxMode::DangerFullAccess) {
        return Ok(());
    }
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let data = canon(data_dir);
    let temp = std::env::temp_dir();
    let roots = workspace.into_iter().chain([temp.as_path()]).map(canon);
    for root in roots {
        if data.starts_with(&root) {
            anyhow::bail!(
                "the data dir {} lies inside {}, which sandboxed commands may write, and this \
                 machine gives them no namespaces of their own ({why}): they could read its keys. \
                 Keep the data dir elsewhere (--data-dir DIR), or pass --allow-exposed-data-dir \
                 to start anyway",
                data.display(),
                root.display()
            );
        }
    }
    Ok(())
}
