//! `gantry jobs list|add|runs|remove`: the scheduled jobs `gantry serve`
//! runs, on the data dir's store (with no server running on it: the store
//! takes one process at a time).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use gantry_core::{CreateThread, Engine, EngineConfig, NewJob};
use gantry_types::cron::{CronJob, JobAction};

use crate::args::{Global, StoreArg};
use crate::model::NoModel;
use crate::setup::DataDir;

/// `gantry jobs ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum JobsCommand {
    /// List jobs: name, schedule, what they run, their next run.
    List(JobsList),
    /// Add a job: a shell command, or an agent turn in a thread of its own.
    ///
    ///   gantry jobs add nightly --schedule "every day at 3am" --agent "Report what changed." --model openai/gpt-5-mini
    ///   gantry jobs add backup --schedule "0 * * * *" --command "tar czf /tmp/ws.tgz ."
    #[command(verbatim_doc_comment)]
    Add(JobsAdd),
    /// A job's past runs, newest first.
    Runs(JobsRuns),
    /// Remove a job and its history (an agent job's thread stays).
    Remove(JobsRemove),
}

/// `gantry jobs list`.
#[derive(Debug, Args)]
pub(crate) struct JobsList {
    #[command(flatten)]
    store: StoreArg,
    /// Print them as JSON.
    #[arg(long)]
    json: bool,
}

/// `gantry jobs add`.
#[derive(Debug, Args)]
pub(crate) struct JobsAdd {
    #[command(flatten)]
    store: StoreArg,
    /// A unique name.
    name: String,
    /// Cron (5 fields, or 6 with seconds first) or English ("every 5 minutes").
    #[arg(long)]
    schedule: String,
    /// Run this shell command (`sh -c`).
    #[arg(long, conflicts_with = "agent", required_unless_present = "agent")]
    command: Option<String>,
    /// The command's directory [default: the current one].
    #[arg(long, requires = "command")]
    cwd: Option<PathBuf>,
    /// Send this prompt as an unattended agent turn, in a thread made for
    /// the job (what would ask for an approval is refused and reported).
    #[arg(long, value_name = "PROMPT")]
    agent: Option<String>,
    /// The agent's model, as `provider/model` (required with --agent).
    #[arg(long, requires = "agent")]
    model: Option<String>,
    /// The agent's workspace [default: the current directory].
    #[arg(long, requires = "agent")]
    workspace: Option<PathBuf>,
    /// Instructions for the agent, added to its system prompt.
    #[arg(long, requires = "agent")]
    instructions: Option<String>,
    /// Time limit of one run, in milliseconds [default: 60000].
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Print the job as JSON.
    #[arg(long)]
    json: bool,
}

/// `gantry jobs runs`.
#[derive(Debug, Args)]
pub(crate) struct JobsRuns {
    #[command(flatten)]
    store: StoreArg,
    /// Job id or name.
    job: String,
    /// Runs to show.
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Print them as JSON.
    #[arg(long)]
    json: bool,
}

/// `gantry jobs remove`.
#[derive(Debug, Args)]
pub(crate) struct JobsRemove {
    #[command(flatten)]
    store: StoreArg,
    /// Job id or name.
    job: String,
}

/// Runs a `jobs` subcommand.
pub(crate) async fn run(global: Global, command: JobsCommand) -> Result<ExitCode> {
    let store = match &command {
        JobsCommand::List(a) => &a.store,
        JobsCommand::Add(a) => &a.store,
        JobsCommand::Runs(a) => &a.store,
        JobsCommand::Remove(a) => &a.store,
    };
    let data = DataDir::open(&global, store).await?;
    let config = EngineConfig {
        data_dir: Some(data.path.clone()),
        ..EngineConfig::default()
    };
    let engine = data.engine(Arc::new(NoModel), config).await?;
    match command {
        JobsCommand::List(args) => list(&engine, args.json, &data.store_name).await?,
        JobsCommand::Add(args) => add(&engine, args).await?,
        JobsCommand::Runs(args) => {
            let job = find(&engine, &args.job).await?;
            let runs = engine.jobs().history(&job.id, Some(args.limit)).await?;
            if args.json {
                println!("{}", serde_json::json!({ "runs": runs }));
            } else if runs.is_empty() {
                eprintln!("{} has not run yet", job.name);
            }
            for r in runs.iter().filter(|_| !args.json) {
                let took = r
                    .duration_ms
                    .map_or("running".to_owned(), |ms| format!("{ms} ms"));
                println!(
                    "{}  {:<9} {:<10} {}",
                    r.id,
                    format!("{:?}", r.status).to_lowercase(),
                    took,
                    first_line(&r.stdout)
                );
            }
        }
        JobsCommand::Remove(args) => {
            let job = find(&engine, &args.job).await?;
            engine.jobs().delete(&job.id).await?;
            eprintln!("removed {} ({})", job.name, job.id);
        }
    }
    engine.flush().await?;
    Ok(ExitCode::SUCCESS)
}

async fn list(engine: &Engine, json: bool, store: &str) -> Result<()> {
    let jobs = engine.jobs().list().await?;
    if json {
        println!("{}", serde_json::json!({ "jobs": jobs }));
        return Ok(());
    }
    if jobs.is_empty() {
        eprintln!("no jobs in {store}");
    }
    for j in &jobs {
        println!("{}  {:<16} {:<24} {}", j.id, j.name, j.description, what(j));
    }
    Ok(())
}

async fn add(engine: &Engine, args: JobsAdd) -> Result<()> {
    if engine.jobs().by_name(&args.name).await.is_ok() {
        bail!(
            "a job named `{}` already exists: `gantry jobs remove {}` first, or choose another name",
            args.name,
            args.name
        );
    }
    // Checked before a thread is made for it.
    let schedule = engine.jobs().parse_schedule(&args.schedule)?;
    let (action, made) = match (args.command, args.agent) {
        (Some(command), _) => {
            let cwd = match args.cwd {
                Some(dir) => dir,
                None => std::env::current_dir().context("the current directory")?,
            };
            let cwd = Some(cwd.to_string_lossy().into_owned());
            (JobAction::Command { command, cwd }, None)
        }
        (None, Some(prompt)) => {
            let Some(model) = args.model else {
                bail!("--agent needs --model: the model its turns use, as provider/model");
            };
            if prompt.trim().is_empty() {
                bail!("--agent: the prompt is empty");
            }
            let cwd = match args.workspace {
                Some(dir) => dir,
                None => std::env::current_dir().context("the current directory")?,
            };
            let thread = engine
                .threads()
                .create(CreateThread {
                    cwd,
                    model: Some(model),
                    name: Some(format!("job {}", args.name)),
                    instructions: args.instructions,
                    ..CreateThread::default()
                })
                .await?;
            let action = JobAction::Prompt {
                thread_id: thread.id.clone(),
                prompt,
            };
            (action, Some(thread.id))
        }
        (None, None) => bail!("give --command or --agent: what the job runs"),
    };
    let created = engine
        .jobs()
        .create(NewJob {
            name: args.name,
            schedule: schedule.expression,
            action,
            timeout_ms: args.timeout_ms,
        })
        .await;
    let job = match created {
        Ok(job) => job,
        Err(e) => {
            // A refused job leaves no thread behind.
            if let Some(thread) = made {
                let _ = engine.threads().delete(&thread).await;
            }
            return Err(e.into());
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&job)?);
    } else {
        println!("{}", job.id);
        eprintln!(
            "added {} ({}): {}; `gantry serve` runs it",
            job.name,
            job.description,
            what(&job)
        );
    }
    Ok(())
}

/// A job by id, else by name.
async fn find(engine: &Engine, job: &str) -> Result<CronJob> {
    match engine.jobs().get(job).await {
        Ok(found) => Ok(found),
        Err(_) => engine
            .jobs()
            .by_name(job)
            .await
            .with_context(|| format!("no job with id or name `{job}` (gantry jobs list)")),
    }
}

/// What a job runs, in a line.
fn what(job: &CronJob) -> String {
    match &job.action {
        JobAction::Command { command, .. } => format!("command: {}", first_line(command)),
        JobAction::Prompt { thread_id, prompt } => {
            format!("agent in thread {thread_id}: {}", first_line(prompt))
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
