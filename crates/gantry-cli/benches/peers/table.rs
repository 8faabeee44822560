//! Medians and the Markdown table.

use std::fmt::Write;

use crate::run::Sample;

/// The median of `values` (sorted in place), 0 when empty.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Medians of one agent's samples.
struct Medians {
    wall_s: f64,
    rss_mib: f64,
    startup_ms: f64,
    round_ms: f64,
    profile_seen: f64,
}

fn medians(samples: &[Sample]) -> Medians {
    let of = |f: &dyn Fn(&Sample) -> f64| median(&mut samples.iter().map(f).collect::<Vec<_>>());
    Medians {
        wall_s: of(&|s| s.wall.as_secs_f64()),
        rss_mib: of(&|s| s.peak_rss_kib as f64 / 1024.0),
        startup_ms: of(&|s| s.startup.as_secs_f64() * 1000.0),
        round_ms: of(&|s| s.per_round.as_secs_f64() * 1000.0),
        profile_seen: of(&|s| s.profile_seen as f64),
    }
}

/// The table of every agent's medians, with ratios against the first row
/// (Gantry) when it is there.
pub(crate) fn render(results: &[(String, Vec<Sample>)], runs: usize) -> String {
    let rows: Vec<(&str, usize, Option<Medians>)> = results
        .iter()
        .map(|(label, samples)| {
            let m = (!samples.is_empty()).then(|| medians(samples));
            (label.as_str(), samples.len(), m)
        })
        .collect();
    let base = rows
        .first()
        .filter(|(label, _, _)| label.starts_with("gantry exec ("))
        .and_then(|(_, _, m)| m.as_ref());
    let ratio = |value: f64, pick: fn(&Medians) -> f64| match base {
        Some(b) if pick(b) > 0.0 => format!(" ({:.1}×)", value / pick(b)),
        _ => String::new(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| agent | verified runs | wall | peak RSS | startup to first request | per tool round | commands that saw the profile |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (label, n, m) in &rows {
        match m {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "| {label} | {n}/{runs} | {:.3} s{} | {:.0} MiB{} | {:.0} ms{} | {:.1} ms{} | {:.0}/10 |",
                    m.wall_s,
                    ratio(m.wall_s, |b| b.wall_s),
                    m.rss_mib,
                    ratio(m.rss_mib, |b| b.rss_mib),
                    m.startup_ms,
                    ratio(m.startup_ms, |b| b.startup_ms),
                    m.round_ms,
                    ratio(m.round_ms, |b| b.round_ms),
                    m.profile_seen,
                );
            }
            None => {
                let _ = writeln!(out, "| {label} | 0/{runs} | | | | | |");
            }
        }
    }
    out
}
