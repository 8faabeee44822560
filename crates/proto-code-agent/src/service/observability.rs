//! The newer A3S proto's observability: per-tool metrics and the cost of
//! model use, both read from what the engine recorded (each tool call's
//! item with its start, end and outcome; each turn's usage and cost), and
//! the state of a session's lanes.

use std::collections::BTreeMap;

use gantry_core::projection::{ToolOutcome, tool_outcome};
use gantry_core::{ThreadQuery, policy};
use gantry_types::{ItemKind, ItemStatus, Lane, ThreadView};
use tonic::Status;

use super::Ctx;
use crate::names::wire;
use crate::pb;
use crate::status::{session_id, status};
use crate::views::u32_of;

/// `GetToolMetrics`: the session's tool calls by tool (A3S's names):
/// calls, successes, failures (refused calls included), durations, the
/// last call's start; only `tool_name` when given (either name works).
pub(crate) async fn get_tool_metrics(
    ctx: &Ctx,
    req: pb::GetToolMetricsRequest,
) -> Result<pb::GetToolMetricsResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.live_session(&id).await?;
    let only = crate::names::engine(&req.tool_name);
    let mut by_tool: BTreeMap<String, Stats> = BTreeMap::new();
    for item in view.turns.iter().flat_map(|t| &t.items) {
        let Some(call) = item.public_tool_call() else {
            continue;
        };
        if !only.is_empty() && call.name != only {
            continue;
        }
        let outcome = tool_outcome(item);
        if outcome == ToolOutcome::Running {
            continue;
        }
        let duration = item
            .completed_at
            .map_or(0, |end| u64::try_from(end - item.started_at).unwrap_or(0));
        by_tool.entry(wire(&call.name).to_owned()).or_default().add(
            duration,
            !outcome.is_failure(),
            item.started_at,
        );
    }
    let total_calls = by_tool.values().map(|s| s.calls).sum();
    let total_duration_ms = by_tool.values().map(|s| s.total_ms).sum();
    Ok(pb::GetToolMetricsResponse {
        tools: by_tool.into_iter().map(|(n, s)| s.into_pb(n)).collect(),
        total_calls,
        total_duration_ms,
    })
}

/// One tool's calls.
#[derive(Default)]
struct Stats {
    calls: u64,
    ok: u64,
    total_ms: u64,
    min_ms: u64,
    max_ms: u64,
    last_at: i64,
}

impl Stats {
    fn add(&mut self, ms: u64, ok: bool, at: i64) {
        self.min_ms = if self.calls == 0 {
            ms
        } else {
            self.min_ms.min(ms)
        };
        self.max_ms = self.max_ms.max(ms);
        self.calls += 1;
        self.ok += u64::from(ok);
        self.total_ms += ms;
        self.last_at = self.last_at.max(at);
    }

    fn into_pb(self, tool_name: String) -> pb::ToolStats {
        pb::ToolStats {
            tool_name,
            total_calls: self.calls,
            success_count: self.ok,
            failure_count: self.calls - self.ok,
            total_duration_ms: self.total_ms,
            min_duration_ms: self.min_ms,
            max_duration_ms: self.max_ms,
            avg_duration_ms: self.total_ms.checked_div(self.calls).unwrap_or(0),
            last_called_at: rfc3339(self.last_at),
        }
    }
}

/// `GetCostSummary`: tokens and cost (the engine prices each turn from the
/// model catalog) of one session or every session, optionally of one model
/// and between two days (`YYYY-MM-DD`, UTC, both included), by model and by
/// day. `call_count` counts model requests. A turn is counted under the
/// model it ran with (turns recorded before the engine kept it: under the
/// session's model).
pub(crate) async fn get_cost_summary(
    ctx: &Ctx,
    req: pb::GetCostSummaryRequest,
) -> Result<pb::GetCostSummaryResponse, Status> {
    let views = match req.session_id.trim() {
        "" => all_sessions(ctx).await?,
        id => vec![ctx.live_session(&session_id(id)?).await?],
    };
    let (from, to) = (
        day_filter("start_date", &req.start_date)?,
        day_filter("end_date", &req.end_date)?,
    );
    let model = req.model.trim();
    let mut by_model: BTreeMap<String, pb::ModelCostBreakdownProto> = BTreeMap::new();
    let mut by_day: BTreeMap<String, pb::DayCostBreakdownProto> = BTreeMap::new();
    for view in &views {
        for turn in view.turns.iter().map(|t| &t.turn) {
            let ran_with = turn.model.as_ref().unwrap_or(&view.thread.model);
            if !model.is_empty() && ran_with != model && !ran_with.ends_with(&format!("/{model}")) {
                continue;
            }
            let day = date(turn.started_at);
            if from.as_ref().is_some_and(|f| &day < f) || to.as_ref().is_some_and(|t| &day > t) {
                continue;
            }
            let u = &turn.usage;
            let tokens = u.input_tokens + u.output_tokens;
            let calls = u64::from(turn.rounds);
            let m =
                by_model
                    .entry(ran_with.clone())
                    .or_insert_with(|| pb::ModelCostBreakdownProto {
                        model: ran_with.clone(),
                        ..Default::default()
                    });
            m.prompt_tokens += u.input_tokens;
            m.completion_tokens += u.output_tokens;
            m.total_tokens += tokens;
            m.cost_usd += turn.cost_usd;
            m.call_count += calls;
            let d = by_day
                .entry(day.clone())
                .or_insert_with(|| pb::DayCostBreakdownProto {
                    date: day,
                    ..Default::default()
                });
            d.cost_usd += turn.cost_usd;
            d.call_count += calls;
            d.total_tokens += tokens;
        }
    }
    let models: Vec<_> = by_model.into_values().collect();
    Ok(pb::GetCostSummaryResponse {
        total_cost_usd: models.iter().map(|m| m.cost_usd).sum(),
        total_prompt_tokens: models.iter().map(|m| m.prompt_tokens).sum(),
        total_completion_tokens: models.iter().map(|m| m.completion_tokens).sum(),
        total_tokens: models.iter().map(|m| m.total_tokens).sum(),
        call_count: models.iter().map(|m| m.call_count).sum(),
        by_model: models,
        by_day: by_day.into_values().collect(),
    })
}

/// Every session not destroyed.
async fn all_sessions(ctx: &Ctx) -> Result<Vec<std::sync::Arc<ThreadView>>, Status> {
    let mut views = Vec::new();
    let mut query = ThreadQuery {
        archived: Some(false),
        limit: 1000,
        cursor: None,
    };
    loop {
        let page = ctx.engine.threads().list(&query).await.map_err(status)?;
        for thread in page.threads {
            match ctx.engine.threads().read(&thread.id).await {
                Ok(view) => views.push(view),
                Err(gantry_core::EngineError::ThreadNotFound(_)) => {}
                Err(e) => return Err(status(e)),
            }
        }
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return Ok(views),
        }
    }
}

/// A `YYYY-MM-DD` filter; empty is none.
fn day_filter(field: &str, value: &str) -> Result<Option<String>, Status> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let b = value.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return Err(Status::invalid_argument(format!(
            "{field}: `{}` is not YYYY-MM-DD",
            gantry_grpc::clip(value)
        )));
    }
    Ok(Some(value.to_owned()))
}

/// The UTC day of a unix-ms time, `YYYY-MM-DD`.
fn date(ms: i64) -> String {
    let (y, m, d) = civil(ms.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// A unix-ms time as RFC 3339 (UTC, milliseconds); empty for 0.
fn rfc3339(ms: i64) -> String {
    if ms == 0 {
        return String::new();
    }
    let in_day = ms.rem_euclid(86_400_000);
    let (h, min, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    format!("{}T{h:02}:{min:02}:{s:02}.{milli:03}Z", date(ms))
}

/// Year, month, day of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `GetQueueStats`: the session's work by lane, from its turns: `active`
/// is what runs now (a model request in `generate`, tool calls in `query`
/// and `execute`), `external` what waits for a client's handler or
/// confirmation, `completed` and `failed` what ended. Gantry keeps no queue
/// of its own beyond the running turn: `pending` is the inputs queued for
/// after it (in `generate`), and nothing dead-letters.
pub(crate) async fn get_queue_stats(
    ctx: &Ctx,
    req: pb::GetQueueStatsRequest,
) -> Result<pb::GetQueueStatsResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.live_session(&id).await?;
    let mut lanes: BTreeMap<u8, pb::LaneStats> = BTreeMap::new();
    let key = |lane: Lane| match lane {
        Lane::Control => 0u8,
        Lane::Query => 1,
        Lane::Execute => 2,
        Lane::Generate => 3,
    };
    for turn in &view.turns {
        for item in &turn.items {
            let waits = matches!(
                item.kind,
                ItemKind::Approval { .. } | ItemKind::ExternalTask { .. }
            );
            let lane = match (item.public_tool_call(), &item.kind) {
                (Some(call), _) => policy::lane_of(&call.name),
                (None, ItemKind::ExternalTask { tool, .. }) => policy::lane_of(tool),
                (None, ItemKind::Approval { request, .. }) => policy::lane_of(&request.tool),
                _ => continue,
            };
            let stats = lanes.entry(key(lane)).or_default();
            match item.status {
                ItemStatus::InProgress if waits => stats.external += 1,
                ItemStatus::InProgress => stats.active += 1,
                _ if waits => {}
                _ if tool_outcome(item).is_failure() => stats.failed += 1,
                _ => stats.completed += 1,
            }
        }
        let generate = lanes.entry(key(Lane::Generate)).or_default();
        match turn.turn.status {
            gantry_types::TurnStatus::Running => generate.active += 1,
            gantry_types::TurnStatus::Completed => generate.completed += 1,
            _ => generate.failed += 1,
        }
    }
    lanes.entry(key(Lane::Generate)).or_default().pending += u32_of(view.queued.len());
    let mut take = |lane| lanes.remove(&key(lane)).unwrap_or_default();
    Ok(pb::GetQueueStatsResponse {
        control: Some(take(Lane::Control)),
        query: Some(take(Lane::Query)),
        execute: Some(take(Lane::Execute)),
        generate: Some(take(Lane::Generate)),
        dead_letters: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_times_are_utc_calendar_dates() {
        assert_eq!(date(0), "1970-01-01");
        // 2024-02-29T12:34:56.789Z
        assert_eq!(rfc3339(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(rfc3339(0), "");
        assert!(day_filter("start_date", "2024-2-1").is_err());
        assert_eq!(day_filter("d", " ").unwrap(), None);
    }
}
