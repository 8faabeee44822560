//! `gantry threads list|show|export`, and its checkpoints' commands (`threads/checkpoints.rs`).

use std::process::ExitCode;

use anyhow::{Context, Result};
use gantry_core::{EngineConfig, ThreadQuery};
use gantry_types::{ItemKind, ThreadId, ThreadView};

use crate::args::{Global, ThreadsCommand};
use crate::model::NoModel;
use crate::setup::DataDir;

mod checkpoints;

/// Runs a `threads` subcommand. The engine starts without a model, so turns
/// left running by a crash are shown closed, as they are.
pub(crate) async fn run(global: Global, command: ThreadsCommand) -> Result<ExitCode> {
    let store = match &command {
        ThreadsCommand::List(args) => &args.store,
        ThreadsCommand::Show(args) | ThreadsCommand::Checkpoints(args) => &args.store,
        ThreadsCommand::Rewind(args) => &args.store,
        ThreadsCommand::Fork(args) => &args.store,
        ThreadsCommand::Export(args) => &args.store,
    };
    let data = DataDir::open(&global, store).await?;
    // The data dir holds the threads' checkpoint stores.
    let config = EngineConfig {
        data_dir: Some(data.path.clone()),
        ..EngineConfig::default()
    };
    let engine = data.engine(std::sync::Arc::new(NoModel), config).await?;
    match command {
        ThreadsCommand::List(args) => {
            let query = ThreadQuery {
                archived: if args.all { None } else { Some(args.archived) },
                limit: args.limit,
                cursor: args.cursor,
            };
            let page = engine.threads().list(&query).await?;
            if args.json {
                let threads = serde_json::to_value(&page.threads)?;
                let out = serde_json::json!({"threads": threads, "next_cursor": page.next_cursor});
                println!("{out}");
                return Ok(ExitCode::SUCCESS);
            }
            if page.threads.is_empty() {
                eprintln!("no threads in {}", data.store_name);
            }
            for t in &page.threads {
                let archived = if t.archived { " (archived)" } else { "" };
                let status = match t.paused {
                    true => "paused".to_owned(),
                    false => format!("{:?}", t.status).to_lowercase(),
                };
                println!(
                    "{}  {:<8} {:<20} {}{archived}",
                    t.id, status, t.model, t.preview
                );
            }
            if let Some(cursor) = page.next_cursor {
                eprintln!("more: gantry threads list --cursor {cursor}");
            }
        }
        ThreadsCommand::Show(args) => {
            let id = ThreadId::from(args.id.as_str());
            let view = engine.threads().read(&id).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                print_transcript(&view);
            }
        }
        ThreadsCommand::Checkpoints(args) => checkpoints::list(&engine, &args).await?,
        ThreadsCommand::Rewind(args) => {
            let code = checkpoints::rewind(&engine, &args).await?;
            engine.flush().await?;
            return Ok(code);
        }
        ThreadsCommand::Fork(args) => checkpoints::fork(&engine, &args).await?,
        ThreadsCommand::Export(args) => {
            let id = ThreadId::from(args.id.as_str());
            let json = crate::trajectory::to_json(&crate::trajectory::of(&engine, &id).await?)?;
            match &args.output {
                Some(path) => crate::trajectory::write_atomic(path, &json)?,
                None => {
                    use std::io::Write;
                    std::io::stdout()
                        .lock()
                        .write_all(&json)
                        .context("cannot write to stdout")?;
                }
            }
        }
    }
    engine.flush().await?;
    Ok(ExitCode::SUCCESS)
}

fn print_transcript(view: &ThreadView) {
    let t = &view.thread;
    println!("thread {}  model {}  cwd {}", t.id, t.model, t.cwd);
    for tv in &view.turns {
        let turn = &tv.turn;
        println!(
            "\n== turn {} ({}, {} rounds)",
            turn.id,
            format!("{:?}", turn.status).to_lowercase(),
            turn.rounds
        );
        for item in &tv.items {
            match &item.kind {
                ItemKind::UserMessage { text, .. } => println!("user: {text}"),
                ItemKind::AgentMessage { text } => println!("agent: {text}"),
                ItemKind::Reasoning { text, .. } => println!("thinking: {text}"),
                ItemKind::CommandExecution {
                    command, exit_code, ..
                } => match exit_code {
                    Some(code) => println!("$ {command}  (exit {code})"),
                    None => println!("$ {command}  ({:?})", item.status),
                },
                ItemKind::FileChange { path, .. } => println!("edited {path}"),
                ItemKind::ToolCall { name, error, .. } => match error {
                    Some(e) => println!("tool {name}: error: {e}"),
                    None => println!("tool {name}"),
                },
                ItemKind::Error { message } => println!("error: {message}"),
                ItemKind::StructuredOutput { payload, .. } => println!("output: {payload}"),
                ItemKind::TodoList { todos } => println!("todos: {} items", todos.len()),
                ItemKind::Approval {
                    request, decision, ..
                } => println!(
                    "approval for {}: {:?}",
                    request.command.as_deref().unwrap_or(&request.tool),
                    decision
                ),
                ItemKind::UserInput {
                    questions, answers, ..
                } => println!(
                    "asked the user {} question(s): {}",
                    questions.len(),
                    answers
                        .as_ref()
                        .map_or("no answer".to_owned(), |a| format!("{} answered", a.len()))
                ),
                ItemKind::ExternalTask {
                    tool,
                    result,
                    error,
                    ..
                } => println!(
                    "external task {tool}: {}",
                    result.as_deref().or(error.as_deref()).unwrap_or("pending")
                ),
                ItemKind::ContextCompaction {
                    trigger, summary, ..
                } => {
                    println!("context compacted ({trigger}): {summary}")
                }
            }
        }
    }
}
