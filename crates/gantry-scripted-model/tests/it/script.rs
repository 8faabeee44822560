//! Script parsing: the documented examples load, mistakes are named.

use gantry_scripted_model::{HttpError, Reply, Script, ScriptError, Step, ToolCallSpec};
use serde_json::json;

const DOC_EXAMPLE: &str = r#"{"steps": [
  {"reply": {"reasoning": "The user wants a listing.",
             "text": "Let me look.",
             "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}},
  {"error": {"status": 429, "retry_after": 1}},
  {"reply": {"text": "There are two files.", "chunk_size": 4, "delay_ms": 20}}
]}"#;

#[test]
fn documented_example_parses() {
    let script = Script::from_json(DOC_EXAMPLE).unwrap();
    assert_eq!(
        script.steps,
        vec![
            Step::tool_call("shell", json!({"command": "ls"}))
                .with_text("Let me look.")
                .with_reasoning("The user wants a listing."),
            Step::http_error(429).with_retry_after(1.0),
            Step::text("There are two files.")
                .with_chunk_size(4)
                .with_delay_ms(20),
        ]
    );
}

#[test]
fn bare_array_and_every_field_parse() {
    let json = r#"[
      {"reply": {"tool_calls": [{"id": "c9", "name": "edit", "arguments": "{\"broken"}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 8, "reasoning_tokens": 1},
                 "cut_after": 3, "malformed_after": 2, "error_after": 4, "finish_reason": "length",
                 "model": "m-2025"}},
      {"error": {"status": 500, "body": {"detail": "boom"}}}
    ]"#;
    let script = Script::from_json(json).unwrap();
    let Step::Reply(Reply {
        tool_calls,
        usage,
        cut_after,
        finish_reason,
        model,
        ..
    }) = &script.steps[0]
    else {
        panic!("expected a reply");
    };
    assert_eq!(
        tool_calls,
        &vec![ToolCallSpec::new("edit", json!("{\"broken")).with_id("c9")]
    );
    assert_eq!(tool_calls[0].arguments_text(), "{\"broken");
    assert_eq!(usage.map(|u| u.cached_tokens), Some(8));
    assert_eq!(
        (*cut_after, finish_reason.as_deref(), model.as_deref()),
        (Some(3), Some("length"), Some("m-2025"))
    );
    assert_eq!(
        script.steps[1],
        Step::Error(HttpError {
            status: 500,
            retry_after: None,
            body: Some(json!({"detail": "boom"}))
        })
    );
}

fn parse_error(json: &str) -> String {
    match Script::from_json(json) {
        Ok(s) => panic!("expected an error, parsed {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn mistakes_are_named() {
    let e = parse_error(r#"{"steps": [{"reply": {"txt": "hi"}}]}"#);
    assert!(
        e.contains("unknown field `txt`") && e.contains("line 1"),
        "{e}"
    );
    let e = parse_error(r#"{"steps": [{"answer": {}}]}"#);
    assert!(e.contains("unknown variant `answer`"), "{e}");
    let e = parse_error(r#"{"steps": [{"error": {"retry_after": 1}}]}"#);
    assert!(e.contains("missing field `status`"), "{e}");
    let e = parse_error("{\"steps\": [\n  {\"reply\": {\"text\": \"hi\"}},\n]}");
    assert!(e.contains("line 3"), "{e}");
    let e = parse_error(r#"{"stepz": []}"#);
    assert!(
        e.contains("unknown field `stepz`") && e.contains("expected {\"steps\""),
        "{e}"
    );
}

#[test]
fn file_errors_name_the_file() {
    let missing = std::env::temp_dir().join("gantry-scripted-model-no-such-script.json");
    match Script::from_file(&missing) {
        Err(ScriptError::Read { path, .. }) => assert!(path.contains("no-such-script")),
        other => panic!("expected a read error, got {other:?}"),
    }
    let bad = std::env::temp_dir().join(format!(
        "gantry-scripted-model-bad-{}.json",
        std::process::id()
    ));
    std::fs::write(&bad, "[{\"reply\": 3}]").unwrap();
    let e = Script::from_file(&bad).unwrap_err().to_string();
    std::fs::remove_file(&bad).unwrap();
    assert!(
        e.contains("gantry-scripted-model-bad-") && e.contains("invalid type"),
        "{e}"
    );
}

#[test]
fn script_round_trips_through_json() {
    let script = Script::new([
        Step::text("a").cut_after(2).with_model("m-2025"),
        Step::http_error(503).with_retry_after(3.0),
    ]);
    let json = serde_json::to_string(&script).unwrap();
    assert_eq!(Script::from_json(&json).unwrap(), script);
}
