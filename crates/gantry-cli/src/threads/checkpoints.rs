//! `gantry threads checkpoints|rewind|fork`.

use std::process::ExitCode;

use anyhow::Result;
use gantry_core::{Engine, Rewound};
use gantry_types::ThreadId;

use crate::args::{ForkArgs, RewindArgs, ShowArgs};

/// Prints a thread's checkpoints, oldest first.
pub(super) async fn list(engine: &Engine, args: &ShowArgs) -> Result<()> {
    let id = ThreadId::from(args.id.as_str());
    let entries = engine.threads().checkpoints(&id).await?;
    if args.json {
        let list: Vec<_> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "id": e.checkpoint.id,
                    "turn_id": e.turn_id,
                    "at": e.at,
                    "files_changed": e.checkpoint.files_changed,
                    "not_kept": e.checkpoint.not_kept,
                })
            })
            .collect();
        println!("{}", serde_json::json!({ "checkpoints": list }));
        return Ok(());
    }
    if entries.is_empty() {
        eprintln!("no checkpoints: no turn of {id} changed its workspace");
    }
    for e in &entries {
        println!(
            "{}  turn {}  {} file(s) changed",
            e.checkpoint.id,
            e.turn_id,
            e.checkpoint.files_changed.len()
        );
        for n in &e.checkpoint.not_kept {
            println!("    not kept: {} ({})", n.path, n.reason);
        }
    }
    Ok(())
}

/// Rewinds a thread's workspace; exit code 1, naming the files, when
/// someone else changed files since the agent's last turn.
pub(super) async fn rewind(engine: &Engine, args: &RewindArgs) -> Result<ExitCode> {
    let id = ThreadId::from(args.id.as_str());
    match engine
        .threads()
        .rewind(&id, &args.checkpoint, args.force)
        .await?
    {
        Rewound::Done { thread, restored } => {
            println!(
                "rewound {} ({} path(s) changed); continue in thread {}",
                thread.cwd,
                restored.len(),
                thread.id
            );
            Ok(ExitCode::SUCCESS)
        }
        Rewound::Conflicts(files) => {
            eprintln!("not rewound: changed since the agent's last turn, not by it:");
            for file in &files {
                eprintln!("  {file}");
            }
            eprintln!("rewind with --force to lose these changes");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Forks a thread at a checkpoint into a new directory.
pub(super) async fn fork(engine: &Engine, args: &ForkArgs) -> Result<()> {
    let id = ThreadId::from(args.id.as_str());
    let thread = engine.threads().fork_at(&id, &args.checkpoint).await?;
    println!("forked into thread {} in {}", thread.id, thread.cwd);
    Ok(())
}
