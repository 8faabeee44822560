//! `cronjob.reload` of Pando's newer sources: the instance's scheduled
//! jobs replaced by the configuration given (Pando's `CronJobsConfig`),
//! on Gantry's cron. Each Pando job becomes a prompt job named
//! `pando:<tag>:<name>` (`<tag>`: the workspace's FNV-1a, so instances of
//! two directories keep apart), whose runs are unattended turns of a
//! thread of its own in the workspace (or the job's `workDir` inside it),
//! with approvals off: what would ask is refused. A job that is disabled,
//! or every job when the configuration is, is paused.
//!
//! Everything is checked before anything changes; then the instance's
//! previous jobs are deleted (their threads, and so their runs, stay) and
//! the new ones made. A job keeps the thread of the job of the same name
//! it replaces while its directory and model are the same.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use gantry_core::{CreateThread, Engine, EngineError, NewJob};
use gantry_types::cron::{CronJob, JobAction};
use gantry_types::{ApprovalPolicy, ThreadId, ThreadPolicy};
use serde_json::Value;

use crate::discovery::fnv32a;
use crate::service::Service;
use crate::time::parse_go_duration;
use crate::wire::{CronJobConfig, CronJobReloadResult, CronJobsConfig};

/// A job checked and ready to be made.
struct Planned {
    config: CronJobConfig,
    name: String,
    schedule: String,
    cwd: PathBuf,
    model: Option<String>,
    timeout_ms: Option<u64>,
}

/// The params' `cron_jobs`, read as Pando reads them.
pub(crate) fn decode(params: Option<&Value>) -> Result<CronJobsConfig, String> {
    let Some(Value::Object(params)) = params else {
        return Err(match params {
            None => "missing params".to_owned(),
            Some(_) => "decode params: params must be an object".to_owned(),
        });
    };
    let Some(jobs) = params.get("cron_jobs") else {
        return Err("missing cron_jobs".to_owned());
    };
    if jobs.is_null() {
        return Ok(CronJobsConfig::default());
    }
    serde_json::from_value(jobs.clone()).map_err(|e| format!("decode cron_jobs: {e}"))
}

/// Replaces the instance's jobs with `config`'s.
pub(crate) async fn reload(
    service: &Service,
    config: CronJobsConfig,
) -> Result<CronJobReloadResult, String> {
    let engine = service.engine();
    let prefix = prefix(service.workspace());
    let planned = plan(service, &prefix, &config)?;
    // One reload at a time, from listing the old jobs to making the new.
    let _reloading = service.reload_lock().await;
    let old: Vec<CronJob> = engine
        .jobs()
        .list()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|j| j.name.starts_with(&prefix))
        .collect();
    let mut threads: HashMap<String, ThreadId> = HashMap::new();
    for job in &old {
        if let JobAction::Prompt { thread_id, .. } = &job.action {
            threads.insert(job.name.clone(), thread_id.clone());
        }
        match engine.jobs().delete(&job.id).await {
            Ok(()) | Err(EngineError::NotFound { .. }) => {}
            Err(e) => return Err(format!("cannot remove job {}: {e}", job.name)),
        }
    }
    for job in planned {
        let thread = match threads.get(&job.name) {
            Some(id) if keeps(engine, id, &job).await => id.clone(),
            _ => new_thread(engine, &job).await?,
        };
        let made = engine
            .jobs()
            .create(NewJob {
                name: job.name.clone(),
                schedule: job.schedule.clone(),
                action: JobAction::Prompt {
                    thread_id: thread,
                    prompt: job.config.prompt.clone(),
                },
                timeout_ms: job.timeout_ms,
            })
            .await
            .map_err(|e| format!("cronjob {:?}: {e}", job.config.name))?;
        if !(config.enabled && job.config.enabled) {
            engine
                .jobs()
                .pause(&made.id)
                .await
                .map_err(|e| format!("cronjob {:?}: {e}", job.config.name))?;
        }
    }
    Ok(CronJobReloadResult {
        jobs: i64::try_from(config.jobs.len()).unwrap_or(i64::MAX),
        scheduler: true,
    })
}

/// Checks every job as Pando does (name, unique, schedule, prompt), and
/// what Gantry needs besides (a directory inside the workspace, a timeout
/// it can read).
fn plan(service: &Service, prefix: &str, config: &CronJobsConfig) -> Result<Vec<Planned>, String> {
    let mut seen = HashSet::new();
    let mut planned = Vec::with_capacity(config.jobs.len());
    for (i, job) in config.jobs.iter().enumerate() {
        let name = job.name.trim();
        if name.is_empty() {
            return Err(format!("cronjobs.jobs[{i}].name is required"));
        }
        if !seen.insert(name.to_owned()) {
            return Err(format!("duplicate cronjob name {name:?}"));
        }
        let schedule = service
            .engine()
            .jobs()
            .parse_schedule(&job.schedule)
            .map_err(|e| format!("cronjob {name:?}: invalid cron schedule: {e}"))?
            .expression;
        if job.prompt.trim().is_empty() {
            return Err(format!("cronjob {name:?}: prompt is required"));
        }
        let timeout_ms = match job.timeout.trim() {
            "" => None,
            text => Some(
                parse_go_duration(text)
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| {
                        format!(
                            "cronjob {name:?}: timeout {text:?} is not a Go duration such as 30m"
                        )
                    })?,
            ),
        };
        let cwd = service
            .inside(&job.work_dir)
            .map_err(|e| format!("cronjob {name:?}: workDir: {e}"))?;
        planned.push(Planned {
            config: job.clone(),
            name: format!("{prefix}{name}"),
            schedule,
            cwd,
            model: Some(job.model.trim().to_owned()).filter(|m| !m.is_empty()),
            timeout_ms,
        });
    }
    Ok(planned)
}

/// The names of the instance's jobs start with this.
fn prefix(workspace: &str) -> String {
    format!("pando:{:08x}:", fnv32a(workspace))
}

/// Whether the replaced job's thread still fits the new job.
async fn keeps(engine: &Engine, thread: &ThreadId, job: &Planned) -> bool {
    let Ok(view) = engine.threads().read(thread).await else {
        return false;
    };
    let t = &view.thread;
    std::path::Path::new(&t.cwd) == job.cwd
        && job
            .model
            .as_deref()
            .is_none_or(|m| t.model == m || t.model.ends_with(&format!("/{m}")))
}

/// A thread for the job's runs.
async fn new_thread(engine: &Engine, job: &Planned) -> Result<ThreadId, String> {
    let create = CreateThread {
        cwd: job.cwd.clone(),
        model: job.model.clone(),
        name: Some(format!("cron {}", job.config.name.trim())),
        // Unattended: nobody is there to approve.
        policy: ThreadPolicy {
            approval: ApprovalPolicy::Never,
            ..ThreadPolicy::default()
        },
        ..CreateThread::default()
    };
    engine
        .threads()
        .create(create)
        .await
        .map(|t| t.id)
        .map_err(|e| format!("cronjob {:?}: {e}", job.config.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_are_read_as_pando_reads_them() {
        assert_eq!(decode(None).unwrap_err(), "missing params");
        assert_eq!(decode(Some(&json!({}))).unwrap_err(), "missing cron_jobs");
        assert!(
            decode(Some(&json!({"cron_jobs": 5})))
                .unwrap_err()
                .starts_with("decode cron_jobs: ")
        );
        let config = decode(Some(&json!({"cron_jobs": {"enabled": true, "jobs": [
            {"name": "n", "schedule": "0 1 * * *", "prompt": "p", "enabled": true,
             "workDir": "sub", "timeout": "30m", "tags": ["a"]}
        ]}})))
        .unwrap();
        assert!(config.enabled);
        let job = &config.jobs[0];
        assert_eq!(
            (job.work_dir.as_str(), job.timeout.as_str()),
            ("sub", "30m")
        );
        assert_eq!(job.tags, ["a"]);
        assert_eq!(
            decode(Some(&json!({"cron_jobs": null}))).unwrap(),
            CronJobsConfig::default()
        );
    }

    #[test]
    fn an_instances_jobs_share_a_prefix_of_its_workspace() {
        assert_eq!(prefix(""), "pando:811c9dc5:");
        assert_ne!(prefix("/a"), prefix("/b"));
    }
}
