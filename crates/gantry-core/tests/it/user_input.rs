//! The agent asks the user (`request_user_input`), end to end through the
//! engine with the scripted model: answered, refused answers, timed out,
//! interrupted, a restart while waiting, bad questions, unattended turns.

use crate::common;

use common::*;
use gantry_core::projection::{UserInputState, pending_user_inputs, user_inputs};
use gantry_core::{EngineConfig, EngineError, NewJob, Notification, Subscription};
use gantry_testkit::Step;
use gantry_types::cron::{ExecutionStatus, JobAction};
use gantry_types::{
    ApprovalPolicy, EventPayload, Item, ItemKind, ItemStatus, ResolvedBy, ThreadPolicy, TurnStatus,
    UserInputAnswer, UserInputOffer,
};
use serde_json::{Value, json};

const TOOL: &str = "request_user_input";

/// A policy under which someone answers questions, waiting `timeout_ms`.
fn attended(timeout_ms: u64) -> ThreadPolicy {
    let mut policy = ThreadPolicy {
        approval: ApprovalPolicy::OnRequest,
        ..ThreadPolicy::default()
    };
    policy.user_input.offer = UserInputOffer::Auto;
    policy.user_input.timeout_ms = timeout_ms;
    policy
}

/// Two questions: one pick with free text, one multi-select.
fn ask() -> Step {
    Step::tool_call(
        TOOL,
        json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which database should the service use?",
             "options": [{"label": "PostgreSQL", "description": "a server"},
                         {"label": "SQLite", "description": "a file"}],
             "allow_free_text": true},
            {"id": "targets", "header": "Targets", "question": "Where must it run?",
             "options": [{"label": "Linux", "description": ""}, {"label": "macOS", "description": ""}],
             "multi_select": true}
        ]}),
    )
}

async fn harness(steps: Vec<Step>, policy: ThreadPolicy) -> Harness {
    let h = Harness::new(steps).await;
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    h
}

/// Waits for the next `user_input` item to start.
async fn asked(sub: &mut Subscription) -> Item {
    let n = wait_for(sub, |n| {
        matches!(n, Notification::Event(e)
            if matches!(&e.payload, EventPayload::ItemStarted { item } if item.kind.name() == "user_input"))
    })
    .await;
    let Notification::Event(e) = n else {
        unreachable!()
    };
    let EventPayload::ItemStarted { item } = &e.payload else {
        unreachable!()
    };
    item.clone()
}

fn request_id(item: &Item) -> String {
    let ItemKind::UserInput { request_id, .. } = &item.kind else {
        panic!("not a user-input request: {item:?}")
    };
    request_id.clone()
}

fn answer(id: &str, selected: &[&str], text: Option<&str>) -> UserInputAnswer {
    UserInputAnswer {
        id: id.into(),
        selected: selected.iter().map(|s| (*s).to_owned()).collect(),
        text: text.map(str::to_owned),
    }
}

/// What request `n` told the model about its last tool call, as JSON.
fn told(h: &Harness, n: usize) -> Value {
    let text = last_tool_result(&h.llm, n);
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// See `safety.rs`: jumps tokio's clock once the turn waits on its timer.
async fn jump_past(ms: u64) {
    tokio::time::pause();
    tokio::time::advance(std::time::Duration::from_millis(ms + 1)).await;
    tokio::time::resume();
}

/// The `user_input` item of the thread's turn `turn`, as stored.
async fn stored_request(h: &Harness, turn: usize) -> Item {
    h.view().await.turns[turn]
        .items
        .iter()
        .find(|i| i.kind.name() == "user_input")
        .cloned()
        .expect("a user_input item")
}

#[tokio::test]
async fn the_user_answers_the_model_hears_it_and_only_the_first_answer_counts() {
    let h = harness(
        vec![ask(), Step::text("SQLite it is"), Step::text("welcome")],
        attended(60_000),
    )
    .await;
    let (mut sub, turn) = h.start_turn("set up the service").await;
    let item = asked(&mut sub).await;
    let id = request_id(&item);
    assert!(offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));

    // A client that connects now sees what is asked, from the view alone.
    let view = h.view().await;
    let pending: Vec<_> = pending_user_inputs(&view).collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].request_id, id);
    assert_eq!(pending[0].turn_id, &turn);
    assert_eq!(pending[0].questions[0].header, "Database");
    assert!(pending[0].questions[1].multi_select);
    assert_eq!(pending[0].timeout_ms, 60_000);

    // An answer that does not fit is refused, naming it; nothing is used up.
    let safety = h.engine.safety();
    let wrong = safety
        .answer_user_input(&h.thread.id, &id, vec![answer("db", &["MySQL"], None)])
        .await;
    assert!(
        matches!(&wrong, Err(EngineError::InvalidInput(m)) if m.contains("`MySQL` is not an option")),
        "{wrong:?}"
    );
    let unknown = safety
        .answer_user_input(&h.thread.id, "no-such", vec![])
        .await;
    assert!(
        matches!(&unknown, Err(EngineError::NotFound { .. })),
        "{unknown:?}"
    );

    let given = vec![
        answer("targets", &["Linux", "macOS"], None),
        answer("db", &["SQLite"], Some("with WAL")),
    ];
    let recorded = safety
        .answer_user_input(&h.thread.id, &id, given)
        .await
        .unwrap();
    assert_eq!(recorded[0].id, "db", "recorded in question order");
    let again = safety
        .answer_user_input(&h.thread.id, &id, vec![answer("db", &["PostgreSQL"], None)])
        .await;
    assert!(
        matches!(&again, Err(EngineError::AlreadyResolved { .. })),
        "the first answer won: {again:?}"
    );

    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let model = told(&h, 1);
    assert_eq!(model["status"], "answered", "{model}");
    assert_eq!(model["answers"][0]["id"], "db");
    assert_eq!(model["answers"][0]["selected"], json!(["SQLite"]));
    assert_eq!(model["answers"][0]["text"], "with WAL");
    assert_eq!(model["answers"][1]["selected"], json!(["Linux", "macOS"]));

    let stored = stored_request(&h, 0).await;
    assert_eq!(stored.status, ItemStatus::Completed);
    let ItemKind::UserInput {
        answers,
        resolved_by,
        ..
    } = &stored.kind
    else {
        unreachable!()
    };
    assert_eq!(*resolved_by, Some(ResolvedBy::Client));
    assert_eq!(answers.as_ref().map(Vec::len), Some(2), "in question order");
    let view = h.view().await;
    assert_eq!(
        user_inputs(&view).next().map(|r| r.state),
        Some(UserInputState::Answered)
    );
    // The next turn's history holds the call and what the model was told.
    let (_, seen) = h.run_turn("thanks").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let history = h.llm.requests()[2].body["messages"].to_string();
    assert!(history.contains("with WAL"), "{history}");
}

#[tokio::test]
async fn nobody_answers_in_time_the_model_is_told_and_the_turn_goes_on() {
    // Ten minutes: only the paused clock below gets the test there.
    let h = harness(vec![ask(), Step::text("I chose SQLite")], attended(600_000)).await;
    let (mut sub, turn) = h.start_turn("set up the service").await;
    let id = request_id(&asked(&mut sub).await);
    jump_past(600_000).await;
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(h.llm.request_count(), 2, "the model was asked again");
    let model = told(&h, 1);
    assert_eq!(model["status"], "timed_out", "{model}");
    assert!(
        model["note"]
            .as_str()
            .unwrap_or_default()
            .contains("within 10 min"),
        "{model}"
    );
    let stored = stored_request(&h, 0).await;
    assert!(matches!(
        stored.kind,
        ItemKind::UserInput {
            resolved_by: Some(ResolvedBy::Timeout),
            answers: None,
            ..
        }
    ));
    let late = h
        .engine
        .safety()
        .answer_user_input(&h.thread.id, &id, vec![answer("db", &["SQLite"], None)])
        .await;
    assert!(
        matches!(
            &late,
            Err(EngineError::AlreadyResolved {
                how: "timed out",
                ..
            })
        ),
        "{late:?}"
    );
}

#[tokio::test]
async fn an_interrupt_cancels_a_waiting_request() {
    let h = harness(vec![ask(), Step::text("never")], attended(60_000)).await;
    let (mut sub, turn) = h.start_turn("set up the service").await;
    let id = request_id(&asked(&mut sub).await);
    h.engine.turns().interrupt(&h.thread.id).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Interrupted);
    assert_eq!(h.llm.request_count(), 1, "no model request after it");
    let stored = stored_request(&h, 0).await;
    assert_eq!(stored.status, ItemStatus::Interrupted);
    let view = h.view().await;
    assert_eq!(pending_user_inputs(&view).count(), 0);
    assert_eq!(
        user_inputs(&view).next().map(|r| r.state),
        Some(UserInputState::Interrupted)
    );
    let late = h
        .engine
        .safety()
        .answer_user_input(&h.thread.id, &id, vec![])
        .await;
    assert!(
        matches!(&late, Err(EngineError::AlreadyResolved { .. })),
        "{late:?}"
    );
}

#[tokio::test]
async fn a_restart_while_waiting_closes_the_request_as_abandoned() {
    let h = harness(vec![ask(), Step::text("never")], attended(60_000)).await;
    let (mut sub, _turn) = h.start_turn("set up the service").await;
    let id = request_id(&asked(&mut sub).await);
    h.engine.flush().await.expect("events stored");

    // Another engine on the same store, as after the process died.
    let restarted = engine_at(h.dir.path(), &h.llm, EngineConfig::default()).await;
    let view = restarted.threads().read(&h.thread.id).await.unwrap();
    assert_eq!(view.turns[0].turn.status, TurnStatus::Interrupted);
    let request = user_inputs(&view).next().expect("the request");
    assert_eq!(request.request_id, id);
    assert_eq!(request.state, UserInputState::Abandoned);
    let late = restarted
        .safety()
        .answer_user_input(&h.thread.id, &id, vec![answer("db", &["SQLite"], None)])
        .await;
    assert!(
        matches!(&late, Err(EngineError::AlreadyResolved { how, .. }) if how.contains("restart")),
        "{late:?}"
    );
}

#[tokio::test]
async fn bad_questions_are_refused_with_what_to_fix_and_the_model_asks_again() {
    let bad = Step::tool_call(
        TOOL,
        json!({"questions": [
            {"id": "a", "header": "A", "question": "One option?", "options": [{"label": "only"}]},
            {"id": "a", "header": "B", "question": "Twice?"}
        ]}),
    );
    let good = Step::tool_call(
        TOOL,
        json!({"questions": [{"id": "name", "header": "Name", "question": "What name?"}]}),
    );
    let h = harness(vec![bad, good, Step::text("ok")], attended(60_000)).await;
    let (mut sub, turn) = h.start_turn("name it").await;
    let item = asked(&mut sub).await;
    let model = last_tool_result(&h.llm, 1);
    assert!(model.contains("give 2 to 4 options"), "{model}");
    assert!(model.contains("`a` is used twice"), "{model}");
    assert!(model.contains("Call request_user_input again"), "{model}");
    // The corrected call asks a free-text question.
    let ItemKind::UserInput { questions, .. } = &item.kind else {
        unreachable!()
    };
    assert!(questions[0].allow_free_text && questions[0].options.is_empty());
    h.engine
        .safety()
        .answer_user_input(
            &h.thread.id,
            &request_id(&item),
            vec![answer("name", &[], Some("gantry"))],
        )
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert_eq!(told(&h, 2)["answers"][0]["text"], "gantry");
    let refused = &h.view().await.turns[0].items;
    assert!(
        refused
            .iter()
            .any(|i| i.status == ItemStatus::Failed && i.kind.name() == "tool_call"),
        "the bad call is a failed tool call"
    );
}

#[tokio::test]
async fn an_unattended_thread_is_not_offered_the_tool() {
    // By default nobody is said to answer, even where approvals are asked.
    let policy = ThreadPolicy {
        approval: ApprovalPolicy::OnRequest,
        ..ThreadPolicy::default()
    };
    let h = harness(vec![ask(), Step::text("ok")], policy).await;
    let (_, seen) = h.run_turn("set up the service").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(!offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));
    assert!(
        last_tool_result(&h.llm, 1).contains("unknown tool"),
        "a call anyway is refused at once"
    );

    // `auto` under approval `never`: nobody is there to ask.
    let mut policy = ThreadPolicy::default();
    policy.user_input.offer = UserInputOffer::Auto;
    let h = harness(vec![Step::text("hi")], policy).await;
    h.run_turn("hello").await;
    assert!(!offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));

    // `always` offers it even though no approval is ever asked.
    let mut policy = ThreadPolicy::default();
    policy.user_input.offer = UserInputOffer::Always;
    let h = harness(vec![Step::text("hi")], policy).await;
    h.run_turn("hello").await;
    assert!(offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));
}

#[tokio::test]
async fn a_thread_that_becomes_unattended_mid_turn_fails_the_call_at_once() {
    let h = harness(vec![ask(), Step::text("decided myself")], attended(60_000)).await;
    // Paused, the turn starts (its tools fixed) but asks the model nothing.
    h.engine.threads().pause(&h.thread.id).await.unwrap();
    let (mut sub, turn) = h.start_turn("set up the service").await;
    wait_for(&mut sub, |n| {
        matches!(n, Notification::Event(e) if matches!(e.payload, EventPayload::TurnStarted { .. }))
    })
    .await;
    let mut policy = attended(60_000);
    policy.user_input.offer = UserInputOffer::Never;
    h.engine
        .safety()
        .set_policy(&h.thread.id, policy)
        .await
        .unwrap();
    h.engine.threads().resume(&h.thread.id).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));
    let model = last_tool_result(&h.llm, 1);
    assert!(model.contains("nobody can answer questions"), "{model}");
    assert!(
        !completed_kinds(&seen)
            .iter()
            .any(|k| k.name() == "user_input")
    );
}

#[tokio::test]
async fn a_scheduled_prompt_is_never_offered_the_tool_even_when_queued() {
    let mut policy = ThreadPolicy::default();
    policy.user_input.offer = UserInputOffer::Always;
    let h = harness(
        vec![
            ask(),
            Step::text("answered"),
            Step::text("the daily summary"),
        ],
        policy,
    )
    .await;
    let (mut sub, turn) = h.start_turn("set up the service").await;
    let id = request_id(&asked(&mut sub).await);
    let job = h
        .engine
        .jobs()
        .create(NewJob {
            name: "summary".into(),
            schedule: "every day at 9am".into(),
            action: JobAction::Prompt {
                thread_id: h.thread.id.clone(),
                prompt: "summarise the day".into(),
            },
            timeout_ms: None,
        })
        .await
        .unwrap();
    // Its prompt queues behind the turn that waits for the user.
    let engine = h.engine.clone();
    let run = tokio::spawn(async move { engine.jobs().run_now(&job.id).await });
    wait_for(&mut sub, |n| {
        matches!(n, Notification::Event(e) if matches!(e.payload, EventPayload::InputQueued { .. }))
    })
    .await;
    h.engine
        .safety()
        .answer_user_input(&h.thread.id, &id, vec![answer("db", &["SQLite"], None)])
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;
    let run = run.await.unwrap().unwrap();
    assert_eq!(run.status, ExecutionStatus::Success, "{run:?}");
    assert_eq!(run.stdout, "the daily summary");
    assert!(offered_tools(&h.llm, 0).iter().any(|t| t == TOOL));
    assert!(
        !offered_tools(&h.llm, 2).iter().any(|t| t == TOOL),
        "the job's turn: {:?}",
        offered_tools(&h.llm, 2)
    );
}
