//! Context management: automatic and manual compaction, clearing, usage.

use crate::common;

use std::sync::Arc;

use common::*;
use gantry_core::{CreateThread, EngineConfig, IfBusy, ModelResolver, Notification, SingleModel};
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{ClientConfig, ModelClient};
use gantry_testkit::{MockLlm, Script, Step, UsageSpec};
use gantry_types::{EventPayload, ItemKind, ItemStatus, ModelInfo, ModelLimit, TurnStatus};
use serde_json::json;

/// One client for every model, with a small context window.
struct SmallWindow {
    inner: SingleModel,
    context: u64,
}

impl ModelResolver for SmallWindow {
    fn resolve(&self, model: &str) -> Result<Arc<dyn ModelClient>, String> {
        self.inner.resolve(model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        Some(ModelInfo {
            id: model.to_owned(),
            limit: ModelLimit {
                context: self.context,
                output: 1000,
            },
            ..ModelInfo::default()
        })
    }
}

struct Setup {
    engine: gantry_core::Engine,
    llm: MockLlm,
    thread: gantry_types::ThreadId,
    _dir: tempfile::TempDir,
}

async fn setup(steps: Vec<Step>, context: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(steps)).unwrap();
    let client = OpenAiChatClient::new(ClientConfig::new(llm.base_url())).unwrap();
    let models = SmallWindow {
        inner: SingleModel(Arc::new(client)),
        context,
    };
    let engine = engine_with(dir.path(), Arc::new(models), EngineConfig::default()).await;
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().to_path_buf(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    Setup {
        engine,
        llm,
        thread,
        _dir: dir,
    }
}

fn usage(prompt: u64) -> UsageSpec {
    UsageSpec {
        prompt_tokens: prompt,
        completion_tokens: 20,
        ..UsageSpec::default()
    }
}

/// A shell call printing `n` bytes.
fn big_output(n: usize) -> Step {
    Step::tool_call(
        "shell",
        json!({"command": format!("head -c {n} /dev/zero | tr '\\0' a")}),
    )
}

#[tokio::test]
async fn a_turn_that_fills_the_context_compacts_once_and_completes() {
    // Window 4000, threshold 80% = 3200. The provider's counts grow each round;
    // before round 4, 2920 reported + ~1000 for the new tool output crosses it.
    let s = setup(
        vec![
            big_output(4000).with_usage(usage(700)),
            big_output(4000).with_usage(usage(1800)),
            big_output(4000).with_usage(usage(2900)),
            Step::text("The user wanted three big outputs; all three commands ran fine."),
            Step::text("All done."),
        ],
        4000,
    )
    .await;
    let mut sub = s.engine.feeds().subscribe(&s.thread, 1).await.unwrap();
    let turn = s
        .engine
        .turns()
        .send(&s.thread, "print three big outputs", IfBusy::Reject)
        .await
        .unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);

    let compactions: Vec<ItemKind> = completed_kinds(&seen)
        .into_iter()
        .filter(|k| matches!(k, ItemKind::ContextCompaction { .. }))
        .collect();
    assert_eq!(compactions.len(), 1, "compacted exactly once");
    let ItemKind::ContextCompaction {
        summary,
        kept_user_messages,
        tokens_before,
        tokens_after,
        trigger,
    } = &compactions[0]
    else {
        unreachable!()
    };
    assert_eq!(trigger, "auto");
    assert!(summary.contains("three commands ran"));
    assert_eq!(kept_user_messages, &["print three big outputs"]);
    assert!(
        *tokens_before > 3200 && *tokens_after < tokens_before / 2,
        "{tokens_before} -> {tokens_after}"
    );

    let requests = s.llm.requests();
    assert_eq!(requests.len(), 5);
    // The summary request: the whole conversation, no tools, then a request to summarise.
    assert!(requests[3].body.get("tools").is_none());
    let last = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["content"].as_str().unwrap().starts_with("Summarize"));
    // The request after it carries the kept user message and the summary only.
    let after: Vec<String> = requests[4].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}: {}", m["role"], m["content"]))
        .collect();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after[0].contains("print three big outputs"));
    assert!(after[1].contains("three commands ran"));
    // The summary's answer (the fourth) is named as the rounds' are.
    let named: Vec<Option<String>> = events(&seen)
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ModelResponded {
                call: Some(call), ..
            } => Some(call.response_id.clone()),
            _ => None,
        })
        .collect();
    let expected: Vec<Option<String>> = (1..=5)
        .map(|n| Some(format!("chatcmpl-gantry{n}")))
        .collect();
    assert_eq!(named, expected);
}

#[tokio::test]
async fn manual_compaction_and_clear_are_turns_of_their_own() {
    let s = setup(
        vec![
            Step::text("first answer"),
            Step::text("Summary: the user said hello."),
            Step::text("after compaction"),
            Step::text("after clear"),
        ],
        100_000,
    )
    .await;
    let run = |text: &'static str| {
        let engine = s.engine.clone();
        let thread = s.thread.clone();
        async move {
            let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
            let turn = engine
                .turns()
                .send(&thread, text, IfBusy::Reject)
                .await
                .unwrap();
            until_turn_ends(&mut sub, &turn).await
        }
    };
    run("hello").await;
    let before = s.engine.turns().context_usage(&s.thread).await.unwrap();
    assert!(before.used > 0 && before.limit == 100_000 && before.percent > 0.0);

    let mut sub = s.engine.feeds().subscribe(&s.thread, 1).await.unwrap();
    let compact = s.engine.turns().compact(&s.thread).await.unwrap();
    let seen = until_turn_ends(&mut sub, &compact).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    assert!(completed_kinds(&seen).iter().any(|k| matches!(k,
        ItemKind::ContextCompaction { trigger, .. } if trigger == "manual")));

    run("next").await;
    let msgs = s.llm.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let texts: Vec<&str> = msgs
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[0], "hello");
    assert!(texts[1].contains("Summary: the user said hello."));
    assert_eq!(texts[2], "next");

    let clear = s.engine.turns().clear_context(&s.thread).await.unwrap();
    let view = s.engine.threads().read(&s.thread).await.unwrap();
    let last = view.turns.last().unwrap();
    assert_eq!(last.turn.id, clear);
    assert_eq!(last.items[0].status, ItemStatus::Completed);
    run("fresh start").await;
    let msgs = s.llm.requests()[3].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(msgs.len(), 1, "nothing before the clear is sent: {msgs:?}");
    assert_eq!(msgs[0]["content"], "fresh start");
}

#[tokio::test]
async fn a_summary_request_that_overflows_drops_the_oldest_messages_and_retries() {
    let s = setup(
        vec![
            Step::text("one"),
            Step::text("two"),
            Step::http_error(400).with_body(json!({"error": {"message": "This model's maximum context length is 4096 tokens", "type": "invalid_request_error"}})),
            Step::text("Summary after dropping."),
        ],
        100_000,
    )
    .await;
    for text in ["first", "second"] {
        let mut sub = s.engine.feeds().subscribe(&s.thread, 1).await.unwrap();
        let turn = s
            .engine
            .turns()
            .send(&s.thread, text, IfBusy::Reject)
            .await
            .unwrap();
        until_turn_ends(&mut sub, &turn).await;
    }
    let mut sub = s.engine.feeds().subscribe(&s.thread, 1).await.unwrap();
    let turn = s.engine.turns().compact(&s.thread).await.unwrap();
    let seen = until_turn_ends(&mut sub, &turn).await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let requests = s.llm.requests();
    let first_try = requests[2].body["messages"].as_array().unwrap().len();
    let second_try = requests[3].body["messages"].as_array().unwrap().len();
    assert!(second_try < first_try, "{first_try} -> {second_try}");
}

#[tokio::test]
async fn a_round_the_server_says_overflowed_compacts_and_is_asked_again() {
    // The window is unknown here (a local model): only the server's
    // answer says the prompt did not fit.
    let overflow = || {
        Step::http_error(400).with_body(json!({"error": {"message": "Requested tokens (9000) exceed context window of 8192", "code": "context_length_exceeded"}}))
    };
    let s = setup(
        vec![
            Step::text("one"),
            overflow(),
            Step::text("The user said first, then second."),
            Step::text("Answered after compaction."),
            // A second overflow in the same turn after compacting fails it.
            overflow(),
            Step::text("Summary again."),
            overflow(),
        ],
        0,
    )
    .await;
    let ask = |text: &'static str| {
        let engine = s.engine.clone();
        let thread = s.thread.clone();
        async move {
            let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
            let turn = engine
                .turns()
                .send(&thread, text, IfBusy::Reject)
                .await
                .unwrap();
            // This turn's notifications only: the feed replays the thread.
            let seen = until_turn_ends(&mut sub, &turn).await;
            let start = seen
                .iter()
                .position(|n| {
                    matches!(n, Notification::Event(e)
                    if matches!(&e.payload, EventPayload::TurnStarted { turn: t } if t.id == turn))
                })
                .expect("turn_started");
            seen[start..].to_vec()
        }
    };
    ask("first").await;
    let seen = ask("second").await;
    assert_eq!(turn_status(&seen), TurnStatus::Completed);
    let triggers: Vec<String> = completed_kinds(&seen)
        .into_iter()
        .filter_map(|k| match k {
            ItemKind::ContextCompaction { trigger, .. } => Some(trigger),
            _ => None,
        })
        .collect();
    assert_eq!(triggers, ["overflow"]);
    let requests = s.llm.requests();
    assert_eq!(requests.len(), 4);
    // Asked again with the compacted history: the kept messages and the summary.
    let again = requests[3].body["messages"].as_array().unwrap();
    let said = |text: &str| {
        again
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains(text)))
    };
    assert!(said("first, then second"), "the summary: {again:?}");
    assert!(
        !again
            .iter()
            .any(|m| m["role"] == "assistant" && m["content"] == "one"),
        "{again:?}"
    );

    // Once compacted, an overflow again is the turn's error, named.
    let seen = ask("third").await;
    assert_eq!(turn_status(&seen), TurnStatus::Failed);
    let error = completed_kinds(&seen)
        .into_iter()
        .find_map(|k| match k {
            ItemKind::Error { message, .. } => Some(message),
            _ => None,
        })
        .expect("an error item");
    assert!(error.contains("context"), "{error}");
}
