//! Schedules: a cron expression or plain English in, a canonical cron
//! expression and its description in words out, and the next run time.
//!
//! Accepted: 5-field cron (`minute hour day-of-month month day-of-week`), a
//! 6-field form with a leading seconds field (`*/5 * * * * *`), the
//! nicknames `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`, and
//! English such as "every 15 minutes" or "every day at 9am" (via
//! `english-to-cron`, whose 7-field Quartz output is brought back to the
//! 5/6-field form). Times are in the server's local time zone.

use std::str::FromStr;

use chrono::{Local, TimeZone};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// A schedule read from a user's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSchedule {
    /// The canonical cron expression: 5 fields, or 6 with seconds first.
    pub expression: String,
    /// What it means, in words ("At 09:00.").
    pub description: String,
}

/// Reads `input` as cron or English. The error says what is wrong and
/// what is accepted.
pub(super) fn parse_schedule(input: &str) -> Result<ParsedSchedule, String> {
    let input = input.trim();
    if input.is_empty() {
        return Err(format!("the schedule is empty; {ACCEPTED}"));
    }
    let expression = if looks_like_cron(input) {
        let expression = expand_nickname(input)
            .map(str::to_owned)
            .unwrap_or_else(|| input.split_whitespace().collect::<Vec<_>>().join(" "));
        compile(&expression).map_err(|e| {
            format!(
                "invalid cron expression `{input}`: {e}; {ACCEPTED}",
                input = shown(input)
            )
        })?;
        expression
    } else {
        from_english(input)?
    };
    let cron = compile(&expression).map_err(|e| {
        format!(
            "`{input}` reads as `{expression}`, which is not a valid schedule: {e}; {ACCEPTED}",
            input = shown(input),
            expression = shown(&expression)
        )
    })?;
    if next_run_after(&expression, Local::now().timestamp_millis()).is_none() {
        return Err(format!(
            "the schedule `{input}` (`{expression}`) never comes due; {ACCEPTED}",
            input = shown(input),
            expression = shown(&expression)
        ));
    }
    Ok(ParsedSchedule {
        description: describe(&cron),
        expression,
    })
}

/// The first run strictly after `after_ms` (ms since the Unix epoch), in
/// the local time zone; `None` if the expression never fires again.
pub(super) fn next_run_after(expression: &str, after_ms: i64) -> Option<i64> {
    let cron = compile(expression).ok()?;
    let after = Local.timestamp_millis_opt(after_ms).single()?;
    cron.find_next_occurrence(&after, false)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// How many characters of a user's input an error message shows.
const SHOWN_CHARS: usize = 200;

/// `text` as an error message shows it: cut to [`SHOWN_CHARS`] characters
/// and `…`, so a huge input is not echoed whole (a gRPC status message
/// travels in a header, which a client refuses past its size limit).
pub(super) fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => text.into(),
        Some((end, _)) => format!("{}…", &text[..end]).into(),
    }
}

/// What every schedule error ends with.
const ACCEPTED: &str = "use 5 cron fields (minute hour day-of-month month day-of-week, e.g. \
     `*/15 * * * *`), 6 with seconds first (`*/10 * * * * *`), or English such as \
     `every 15 minutes` or `every day at 9am`";

/// Month and weekday names cron accepts.
const NAMES: [&str; 19] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", "SUN",
    "MON", "TUE", "WED", "THU", "FRI", "SAT",
];

/// True when `input` is meant as cron: a nickname, or 5–7 fields made only
/// of cron syntax. English (even "5am, 10am and 3pm") has words that are not.
fn looks_like_cron(input: &str) -> bool {
    if input.starts_with('@') {
        return true;
    }
    let fields: Vec<&str> = input.split_whitespace().collect();
    (5..=7).contains(&fields.len())
        && fields.iter().all(|field| {
            field
                .split([',', '-', '/', '#'])
                .all(|part| is_cron_atom(&part.to_ascii_uppercase()))
        })
}

fn is_cron_atom(part: &str) -> bool {
    let digits = part.trim_end_matches(['L', 'W']);
    matches!(part, "*" | "?" | "L" | "LW")
        || (!part.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        || NAMES.contains(&part)
}

fn expand_nickname(input: &str) -> Option<&'static str> {
    Some(match input.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

/// Parses a 5- or 6-field expression with standard (Vixie) semantics.
fn compile(expression: &str) -> Result<Cron, String> {
    let fields = expression.split_whitespace().count();
    if !(5..=6).contains(&fields) {
        return Err(format!("it has {fields} fields"));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(expression)
        .map_err(|e| e.to_string())
}

/// English to the 5/6-field form. `english-to-cron` gives Quartz fields
/// (`sec min hour dom month dow year`, `?` for "any", `0/15` for "every 15
/// from 0"); croner and users expect standard cron.
fn from_english(input: &str) -> Result<String, String> {
    let not_understood = || {
        format!(
            "cannot read the schedule `{input}`; {ACCEPTED}",
            input = shown(input)
        )
    };
    let quartz =
        english_to_cron::Cron::from_str(&plain_english(input)).map_err(|_| not_understood())?;
    let s = &quartz.syntax;
    let year = s.year.trim();
    if !year.is_empty() && year != "*" {
        return Err(format!(
            "`{input}` names a year ({year}); schedules repeat every year, so leave the year out",
            input = shown(input)
        ));
    }
    let fields = [
        standard_field(&s.seconds, 0, 59),
        standard_field(&s.min, 0, 59),
        standard_field(&s.hour, 0, 23),
        standard_field(&s.day_of_month, 1, 31),
        standard_field(&s.month, 1, 12),
        standard_field(&s.day_of_week, 0, 6),
    ];
    // A run at second 0 is plain 5-field cron.
    let fields = if fields[0] == "0" {
        &fields[1..]
    } else {
        &fields[..]
    };
    let expression = fields.join(" ");
    // The converter skips words it does not know, so "every potato" comes
    // out as its starting point, every minute: only take that when asked.
    if expression == "* * * * *" && !input.to_ascii_lowercase().contains("minute") {
        return Err(not_understood());
    }
    Ok(expression)
}

/// Words the converter does not know, in words it does.
fn plain_english(input: &str) -> String {
    input
        .split_whitespace()
        .map(|word| match word.to_ascii_lowercase().as_str() {
            "daily" => "every day",
            "weekday" | "weekdays" => "Monday through Friday",
            _ => word,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One Quartz field in standard syntax: `?` is `*`, `*/1` is `*`, a step
/// from the field's first value (`0/15`) is `*/15`, a step from elsewhere
/// (`5/15`) is the range `5-59/15`.
fn standard_field(field: &str, min: u32, max: u32) -> String {
    let field = field.trim();
    if field.is_empty() || field == "?" || field == "*/1" {
        return "*".to_owned();
    }
    field
        .split(',')
        .map(|part| match part.split_once('/') {
            Some((start, step)) => match start.parse::<u32>() {
                Ok(s) if s == min => format!("*/{step}"),
                Ok(s) => format!("{s}-{max}/{step}"),
                Err(_) => part.to_owned(),
            },
            None => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// croner's English description, tidied: "At every 15 minutes." reads
/// "Every 15 minutes.".
fn describe(cron: &Cron) -> String {
    let text = cron.describe();
    match text.strip_prefix("At every ") {
        Some(rest) => format!("Every {rest}"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_and_english_parse_table() {
        // input, canonical expression, description
        let table = [
            ("*/15 * * * *", "*/15 * * * *", "Every 15 minutes."),
            (
                "0 9 * * 1-5",
                "0 9 * * 1-5",
                "At 09:00, on Monday, Tuesday, Wednesday, Thursday, and Friday.",
            ),
            ("  30   2 1 * *  ", "30 2 1 * *", "At 02:30, on day 1."),
            ("0 12 * * MON", "0 12 * * MON", "At 12:00, on Monday."),
            ("* * * * * *", "* * * * * *", "Every second."),
            ("*/10 * * * * *", "*/10 * * * * *", "Every 10 seconds."),
            ("@daily", "0 0 * * *", "At 00:00."),
            ("@hourly", "0 * * * *", "At minute 0 past every hour."),
            ("every day at 9am", "0 9 * * *", "At 09:00."),
            ("daily at 7am", "0 7 * * *", "At 07:00."),
            (
                "every weekday at 8:30",
                "30 8 * * MON-FRI",
                "At 08:30, on Monday, Tuesday, Wednesday, Thursday, and Friday.",
            ),
            ("every day at 4:30 pm", "30 16 * * *", "At 16:30."),
            ("every 15 minutes", "*/15 * * * *", "Every 15 minutes."),
            ("every minute", "* * * * *", "Every minute."),
            (
                "every 3 hours",
                "0 */3 * * *",
                "At minute 0, of every 3 hours.",
            ),
            ("every 5 seconds", "*/5 * * * * *", "Every 5 seconds."),
            (
                "at 6:00 pm every Monday through Friday",
                "0 18 * * MON-FRI",
                "At 18:00, on Monday, Tuesday, Wednesday, Thursday, and Friday.",
            ),
            (
                "midnight on Tuesdays",
                "0 0 * * TUE",
                "At 00:00, on Tuesday.",
            ),
        ];
        for (input, expression, description) in table {
            let parsed = parse_schedule(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(parsed.expression, expression, "{input:?}");
            assert_eq!(parsed.description, description, "{input:?}");
        }
    }

    #[test]
    fn bad_schedules_say_why_and_what_works() {
        for (input, says) in [
            ("", "empty"),
            ("61 * * * *", "invalid cron expression `61 * * * *`"),
            ("* * * *", "cannot read the schedule"),
            ("every potato", "cannot read the schedule `every potato`"),
            ("whenever you like", "cannot read the schedule"),
            ("0 0 * * * * 2030", "invalid cron expression"),
            ("@fortnightly", "invalid cron expression"),
            ("0 0 30 2 *", "never comes due"),
        ] {
            let err = parse_schedule(input).expect_err(input);
            assert!(err.contains(says), "{input:?}: {err}");
            assert!(
                err.contains("every day at 9am") || says == "empty" && err.contains("cron"),
                "{input:?}: {err}"
            );
        }
    }

    #[test]
    fn next_run_is_the_next_matching_time() {
        let base = Local
            .with_ymd_and_hms(2030, 1, 1, 8, 59, 30)
            .single()
            .expect("a plain local time");
        let at = |h, m, s| {
            Local
                .with_ymd_and_hms(2030, 1, 1, h, m, s)
                .single()
                .expect("a plain local time")
                .timestamp_millis()
        };
        let ms = base.timestamp_millis();
        assert_eq!(next_run_after("0 9 * * *", ms), Some(at(9, 0, 0)));
        assert_eq!(next_run_after("* * * * * *", ms), Some(at(8, 59, 31)));
        // Mid-second: the next whole second, never the same instant.
        assert_eq!(next_run_after("* * * * * *", ms + 500), Some(at(8, 59, 31)));
        assert_eq!(
            next_run_after("*/15 * * * *", at(9, 0, 0)),
            Some(at(9, 15, 0))
        );
        assert_eq!(next_run_after("not cron", ms), None);
    }
}
