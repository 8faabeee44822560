//! Structured output through `submit_output`, plans, goals, and the thread
//! goal's token budget, against the scripted model over real HTTP.

use crate::common;

use common::*;
use gantry_core::{EngineError, StructuredChunk, StructuredRequest};
use gantry_testkit::{Step, UsageSpec};
use gantry_types::{
    AgentGoal, Complexity, ItemKind, ItemStatus, PlanStepStatus, ThreadGoalStatus, TurnStatus,
};
use serde_json::{Value, json};

fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0}
        },
        "required": ["name", "age"]
    })
}

/// The tool results the model was sent in the request `n` (0-based).
fn tool_results(h: &Harness, n: usize) -> Vec<String> {
    let requests = h.llm.requests();
    requests[n].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn invalid_twice_then_valid_becomes_a_structured_output_item() {
    let h = Harness::new(vec![
        Step::tool_call("submit_output", json!({"name": "Ada"})),
        Step::tool_call("submit_output", json!({"name": "Ada", "age": -1})),
        Step::tool_call("submit_output", json!({"name": "Ada", "age": 36})),
    ])
    .await;
    let mut request = StructuredRequest::new("who wrote the first program?", person_schema());
    request.schema_name = Some("person".into());
    let out = h
        .engine
        .structured()
        .generate(&h.thread.id, request)
        .await
        .expect("valid output");
    assert_eq!(out.payload, json!({"name": "Ada", "age": 36}));

    // Only submit_output was offered.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["submit_output"]);
    // The model saw what failed, each time.
    let first = tool_results(&h, 1);
    assert_eq!(first.len(), 1);
    assert!(
        first[0].contains("\"age\" is a required property"),
        "{first:?}"
    );
    let second = tool_results(&h, 2);
    assert!(second[1].contains("/age"), "{second:?}");
    assert!(second[1].contains("minimum"), "{second:?}");

    let view = h.view().await;
    let turn = view.turns.last().expect("turn");
    assert_eq!(turn.turn.status, TurnStatus::Completed);
    // Each rejected submission is a failed attempt that told the model why.
    let rejected: Vec<_> = turn
        .items
        .iter()
        .filter(|i| i.status == ItemStatus::Failed)
        .collect();
    assert_eq!(rejected.len(), 2);
    assert!(rejected.iter().all(|i| {
        matches!(i.kind, ItemKind::StructuredOutput { .. })
            && i.tool_call
                .as_ref()
                .and_then(|o| o.output.as_deref())
                .is_some_and(|o| o.starts_with("error: "))
    }));
    let last = turn.items.last().expect("item");
    assert_eq!(
        last.kind,
        ItemKind::StructuredOutput {
            schema_name: Some("person".into()),
            payload: json!({"name": "Ada", "age": 36}),
        }
    );
    assert_eq!(last.status, ItemStatus::Completed);
}

#[tokio::test]
async fn exceeding_the_retry_limit_fails_clearly() {
    let h = Harness::new(vec![
        Step::tool_call("submit_output", json!({"name": 1, "age": 2})),
        Step::text("I'd rather just tell you: Ada, 36."),
    ])
    .await;
    let mut request = StructuredRequest::new("who?", person_schema());
    request.retries = 1;
    let err = h
        .engine
        .structured()
        .generate(&h.thread.id, request)
        .await
        .expect_err("no valid output");
    let EngineError::Structured { reason, .. } = &err else {
        panic!("unexpected error {err:?}");
    };
    assert!(reason.contains("2 submissions were rejected"), "{reason}");
    assert!(reason.contains("retry limit 1"), "{reason}");

    let view = h.view().await;
    let turn = view.turns.last().expect("turn");
    assert_eq!(turn.turn.status, TurnStatus::Failed);
    assert!(matches!(
        &turn.items.last().expect("item").kind,
        ItemKind::Error { message } if message == reason
    ));
    // The text answer got a reminder before it was counted as the second attempt.
    assert_eq!(h.llm.request_count(), 2);
}

#[tokio::test]
async fn a_json_text_answer_is_the_structured_output() {
    let h = Harness::new(vec![Step::text(
        "```json\n{\"name\": \"Ada\", \"age\": 36}\n```",
    )])
    .await;
    let mut request = StructuredRequest::new("who wrote the first program?", person_schema());
    request.schema_name = Some("person".into());
    let out = h
        .engine
        .structured()
        .generate(&h.thread.id, request)
        .await
        .expect("the text answer is accepted");
    assert_eq!(out.payload, json!({"name": "Ada", "age": 36}));

    // One request, asking for native structured output beside the tool.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 1);
    let format = &requests[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "person");
    assert_eq!(format["json_schema"]["schema"], person_schema());

    let view = h.view().await;
    let turn = view.turns.last().expect("turn");
    assert_eq!(turn.turn.status, TurnStatus::Completed);
    let last = turn.items.last().expect("item");
    assert_eq!(
        last.kind,
        ItemKind::StructuredOutput {
            schema_name: Some("person".into()),
            payload: json!({"name": "Ada", "age": 36}),
        }
    );
    assert!(last.tool_call.is_none(), "no tool was called");
}

#[tokio::test]
async fn an_invalid_json_text_answer_fails_clearly_after_the_retries() {
    let h = Harness::new(vec![
        Step::text("{\"name\": \"Ada\", \"age\": "),
        Step::text("{\"name\": \"Ada\", \"age\": -1}"),
    ])
    .await;
    let mut request = StructuredRequest::new("who?", person_schema());
    request.retries = 1;
    let err = h
        .engine
        .structured()
        .generate(&h.thread.id, request)
        .await
        .expect_err("no valid output");
    let EngineError::Structured { reason, .. } = &err else {
        panic!("unexpected error {err:?}");
    };
    assert!(reason.contains("2 submissions were rejected"), "{reason}");
    assert!(reason.contains("/age"), "{reason}");
    // The model was told its first text was not JSON.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 2);
    let reminder = requests[1].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(reminder.contains("not valid JSON"), "{reminder}");
    let view = h.view().await;
    assert_eq!(
        view.turns.last().expect("turn").turn.status,
        TurnStatus::Failed
    );
}

#[tokio::test]
async fn a_non_object_schema_is_wrapped_and_streamed() {
    let h = Harness::new(vec![Step::tool_call(
        "submit_output",
        json!({"output": ["a", "b"]}),
    )])
    .await;
    let schema = json!({"type": "array", "items": {"type": "string"}, "minItems": 2});
    let mut stream = h
        .engine
        .structured()
        .stream(&h.thread.id, StructuredRequest::new("two letters", schema))
        .await
        .expect("start");
    let mut partial = String::new();
    let done = loop {
        match stream.next().await.expect("chunk") {
            StructuredChunk::Partial(text) => partial.push_str(&text),
            StructuredChunk::Rejected { problem } => panic!("rejected: {problem}"),
            StructuredChunk::Done(result) => break result.expect("output"),
        }
    };
    assert_eq!(done.payload, json!(["a", "b"]));
    assert_eq!(
        serde_json::from_str::<Value>(&partial).ok(),
        Some(json!(["a", "b"]))
    );
    assert!(stream.next().await.is_none());
    let params = &h.llm.requests()[0].body["tools"][0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["output"]));
}

#[tokio::test]
async fn submissions_stream_as_partial_json_and_a_rejected_one_is_retracted() {
    let h = Harness::new(vec![
        Step::tool_call("submit_output", json!({"name": "Ada", "age": -1})).with_chunk_size(5),
        Step::tool_call("submit_output", json!({"name": "Ada", "age": 36})).with_chunk_size(5),
    ])
    .await;
    let mut stream = h
        .engine
        .structured()
        .stream(
            &h.thread.id,
            StructuredRequest::new("who?", person_schema()),
        )
        .await
        .expect("start");
    // Partial text per attempt; an attempt ends rejected or the turn ends.
    let mut attempts = vec![Vec::new()];
    let mut problems = Vec::new();
    let done = loop {
        match stream.next().await.expect("chunk") {
            StructuredChunk::Partial(text) => attempts.last_mut().expect("attempt").push(text),
            StructuredChunk::Rejected { problem } => {
                problems.push(problem);
                attempts.push(Vec::new());
            }
            StructuredChunk::Done(result) => break result.expect("output"),
        }
    };
    assert_eq!(done.payload, json!({"name": "Ada", "age": 36}));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("minimum"), "{problems:?}");
    // The JSON arrived in pieces as the model wrote it, not as one chunk,
    // and each attempt's pieces join into what the model submitted.
    assert!(attempts.iter().all(|a| a.len() > 2), "{attempts:?}");
    let joined = |a: &Vec<String>| serde_json::from_str::<Value>(&a.concat()).ok();
    assert_eq!(
        joined(&attempts[0]),
        Some(json!({"name": "Ada", "age": -1}))
    );
    assert_eq!(
        joined(&attempts[1]),
        Some(json!({"name": "Ada", "age": 36}))
    );
}

#[tokio::test]
async fn an_invalid_schema_is_refused_before_any_turn() {
    let h = Harness::new(vec![]).await;
    let err = h
        .engine
        .structured()
        .generate(
            &h.thread.id,
            StructuredRequest::new("x", json!({"type": "no-such-type"})),
        )
        .await
        .expect_err("invalid schema");
    assert!(matches!(err, EngineError::InvalidInput(_)), "{err:?}");
    assert!(h.view().await.turns.is_empty());
}

#[tokio::test]
async fn a_plan_is_created_read_back_and_its_steps_move() {
    let plan = json!({
        "goal": "Add a --verbose flag",
        "steps": [
            {"id": "1", "description": "Find the argument parser", "tool": "grep",
             "success_criteria": ["parser located"]},
            {"id": "2", "description": "Add the flag", "tool": "edit_file", "dependencies": ["1"]},
            {"id": "3", "description": "Run the tests", "tool": "shell", "dependencies": ["2"]}
        ],
        "complexity": "simple",
        "required_tools": ["grep", "edit_file", "shell"],
        "estimated_steps": 3
    });
    let h = Harness::new(vec![Step::tool_call("submit_output", plan)]).await;
    let created = h
        .engine
        .plans()
        .create(&h.thread.id, "add a --verbose flag", Some("a Rust CLI"))
        .await
        .expect("plan");
    assert!(!created.id.is_empty());
    assert_eq!(created.goal, "Add a --verbose flag");
    assert_eq!(created.complexity, Complexity::Simple);
    assert_eq!(created.steps.len(), 3);
    assert_eq!(created.steps[1].dependencies, ["1"]);
    assert_eq!(created.steps[0].tool.as_deref(), Some("grep"));
    assert!(
        created
            .steps
            .iter()
            .all(|s| s.status == PlanStepStatus::Pending)
    );
    let prompt = h.llm.requests()[0].body.to_string();
    assert!(prompt.contains("Context:\\na Rust CLI"), "{prompt}");

    let read = h
        .engine
        .plans()
        .get(&h.thread.id, &created.id)
        .await
        .expect("get");
    assert_eq!(read, created);

    let updated = h
        .engine
        .plans()
        .update_step(&h.thread.id, &created.id, "1", PlanStepStatus::Completed)
        .await
        .expect("update");
    assert_eq!(updated.steps[0].status, PlanStepStatus::Completed);
    let again = h
        .engine
        .plans()
        .get(&h.thread.id, &created.id)
        .await
        .unwrap();
    assert_eq!(again.steps[0].status, PlanStepStatus::Completed);
    assert_eq!(again.steps[1].status, PlanStepStatus::Pending);

    let missing = h
        .engine
        .plans()
        .update_step(&h.thread.id, &created.id, "9", PlanStepStatus::Completed)
        .await;
    assert!(matches!(missing, Err(EngineError::NotFound { .. })));
    assert!(matches!(
        h.engine.plans().get(&h.thread.id, "nope").await,
        Err(EngineError::NotFound { .. })
    ));

    // The plan is in the log: a restarted engine reads it back.
    h.engine.flush().await.expect("events stored");
    let engine = engine_at(h.dir.path(), &h.llm, Default::default()).await;
    let reloaded = engine.plans().get(&h.thread.id, &created.id).await.unwrap();
    assert_eq!(reloaded, again);
}

#[tokio::test]
async fn goals_are_extracted_and_checked_as_typed_results() {
    let h = Harness::new(vec![
        Step::tool_call(
            "submit_output",
            json!({"description": "Make the build pass",
                   "success_criteria": ["cargo build succeeds", "cargo test passes"]}),
        ),
        Step::tool_call(
            "submit_output",
            json!({"achieved": false, "progress": 0.5,
                   "remaining_criteria": ["cargo test passes"]}),
        ),
    ])
    .await;
    let goal: AgentGoal = h
        .engine
        .goals()
        .extract(&h.thread.id, "the build is red, fix it")
        .await
        .expect("goal");
    assert_eq!(goal.description, "Make the build pass");
    assert_eq!(goal.success_criteria.len(), 2);
    assert!(!goal.achieved);
    assert!(goal.created_at > 0);

    let check = h
        .engine
        .goals()
        .check_achievement(&h.thread.id, &goal, "the build succeeds; 2 tests fail")
        .await
        .expect("check");
    assert!(!check.achieved);
    assert_eq!(check.progress, 0.5);
    assert_eq!(check.remaining_criteria, ["cargo test passes"]);
    let input = h.llm.requests()[1].body.to_string();
    assert!(input.contains("- cargo test passes"), "{input}");
    assert!(input.contains("2 tests fail"), "{input}");
}

#[tokio::test]
async fn a_goal_token_budget_stops_a_turn_cleanly() {
    let h = Harness::new(vec![
        Step::tool_call("shell", json!({"command": "echo step one"})).with_usage(UsageSpec {
            prompt_tokens: 4000,
            completion_tokens: 1500,
            ..UsageSpec::default()
        }),
        Step::text("never reached"),
    ])
    .await;
    let goal = h
        .engine
        .goals()
        .set(&h.thread.id, "ship the release", Some(5000))
        .await
        .expect("set goal");
    assert_eq!(goal.status, ThreadGoalStatus::Active);
    assert_eq!(goal.tokens_used, 0);

    let (_, seen) = h.run_turn("do the release steps").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    // One request ran; the second would have passed the budget.
    assert_eq!(h.llm.request_count(), 1);
    let kinds = completed_kinds(&seen);
    assert!(
        matches!(kinds.last(), Some(ItemKind::Error { message }) if message.contains("token budget")),
        "{kinds:?}"
    );
    let goal = h
        .engine
        .goals()
        .get(&h.thread.id)
        .await
        .unwrap()
        .expect("goal");
    assert_eq!(goal.status, ThreadGoalStatus::BudgetLimited);
    assert_eq!(goal.tokens_used, 5500);
    let updates = events(&seen)
        .iter()
        .filter(|e| e.payload.name() == "goal_updated")
        .count();
    assert_eq!(updates, 1);

    // A new turn stops before its first request while the budget is spent.
    let (_, seen) = h.run_turn("go on").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(h.llm.request_count(), 1);

    // Setting the same objective with a larger budget continues the goal.
    let goal = h
        .engine
        .goals()
        .set(&h.thread.id, "ship the release", Some(100_000))
        .await
        .unwrap();
    assert_eq!(goal.status, ThreadGoalStatus::Active);
    assert_eq!(goal.tokens_used, 5500);
    let (_, seen) = h.run_turn("go on").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(h.llm.request_count(), 2);

    let cleared = h.engine.goals().clear(&h.thread.id).await.unwrap();
    assert!(cleared.is_some());
    assert_eq!(h.engine.goals().get(&h.thread.id).await.unwrap(), None);
}
