//! The context window over the wire: usage, compaction (a model turn the
//! rpc waits for), clearing, and the errors.

use crate::common;

use common::{Server, guard};
use gantry_core::{IfBusy, Notification};
use gantry_testkit::Step;
use gantry_types::{EventPayload, ThreadId};
use proto_code_agent::pb;
use tonic::Code;

/// A session that starts with a long conversation; its id.
async fn talkative_session(s: &mut Server) -> String {
    let long = "the quick brown fox jumps over the lazy dog ".repeat(200);
    let msg = |role: &str| pb::Message {
        role: role.into(),
        content: long.clone(),
        metadata: Default::default(),
    };
    s.client
        .create_session(pb::CreateSessionRequest {
            initial_context: vec![msg("user"), msg("assistant"), msg("user"), msg("assistant")],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id
}

/// Runs a turn of `session` through the engine and waits for its end.
async fn run_turn(s: &Server, session: &str, text: &str) {
    let thread = ThreadId::from(session);
    let from = s
        .engine
        .threads()
        .read(&thread)
        .await
        .unwrap()
        .thread
        .last_seq
        + 1;
    let mut sub = s.engine.feeds().subscribe(&thread, from).await.unwrap();
    s.engine
        .turns()
        .send(&thread, text, IfBusy::Reject)
        .await
        .unwrap();
    guard("the turn to end", async {
        while let Some(n) = sub.next().await {
            if let Notification::Event(e) = n
                && matches!(e.payload, EventPayload::TurnCompleted { .. })
            {
                return;
            }
        }
    })
    .await;
}

async fn usage(s: &mut Server, session: &str) -> pb::ContextUsage {
    s.client
        .get_context_usage(pb::GetContextUsageRequest {
            session_id: session.into(),
        })
        .await
        .expect("usage")
        .into_inner()
        .usage
        .expect("usage set")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_matches_the_session_and_compaction_shrinks_it() {
    let mut s = Server::start(vec![Step::text("Summary: the user talked about a fox.")]).await;
    let session = talkative_session(&mut s).await;
    let before = usage(&mut s, &session).await;
    assert!(before.total_tokens > 1_000, "{before:?}");
    assert_eq!(before.message_count, 4);
    let described = s
        .client
        .get_session(pb::GetSessionRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .session
        .unwrap()
        .context_usage
        .unwrap();
    assert_eq!(described, before, "the same numbers as GetSession");

    let compacted = guard(
        "compaction",
        s.client.compact_context(pb::CompactContextRequest {
            session_id: session.clone(),
        }),
    )
    .await
    .unwrap()
    .into_inner();
    assert!(compacted.success);
    let (was, now) = (compacted.before.unwrap(), compacted.after.unwrap());
    assert_eq!(was, before);
    assert!(
        now.total_tokens + 1_000 < was.total_tokens,
        "{was:?} -> {now:?}"
    );
    assert!(now.prompt_tokens > 0, "the summary request counts: {now:?}");
    assert_eq!(
        usage(&mut s, &session).await,
        now,
        "the rpc answered after the turn ended"
    );
    let asked = s.llm.requests();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].body.to_string().contains("quick brown fox"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_empties_what_the_model_sees() {
    let mut s = Server::start(vec![Step::text("fresh start")]).await;
    let session = talkative_session(&mut s).await;
    let before = usage(&mut s, &session).await;
    let cleared = s
        .client
        .clear_context(pb::ClearContextRequest {
            session_id: session.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cleared.success);
    let after = usage(&mut s, &session).await;
    assert!(
        after.total_tokens < before.total_tokens / 2,
        "{before:?} -> {after:?}"
    );
    assert!(s.llm.requests().is_empty(), "clearing asks no model");

    // The next request carries nothing from before the clear.
    run_turn(&s, &session, "hello again").await;
    let request = s.llm.requests()[0].body.to_string();
    assert!(
        request.contains("hello again") && !request.contains("quick brown fox"),
        "{request}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_errors_carry_the_right_status() {
    let mut s = Server::start(vec![
        Step::text("slow").with_chunk_size(1).with_delay_ms(200),
    ])
    .await;
    let unreachable = s
        .client
        .create_session(pb::CreateSessionRequest {
            config: Some(pb::SessionConfig {
                llm: Some(pb::LlmConfig {
                    base_url: "http://127.0.0.1:9".into(),
                    ..s.llm_config()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .session_id;
    let err = guard(
        "compaction",
        s.client.compact_context(pb::CompactContextRequest {
            session_id: unreachable,
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");

    // A running turn: neither compaction nor clearing may cut in.
    let busy = s.session().await;
    s.engine
        .turns()
        .send(&ThreadId::from(busy.as_str()), "go", IfBusy::Reject)
        .await
        .unwrap();
    let err = s
        .client
        .compact_context(pb::CompactContextRequest {
            session_id: busy.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let err = s
        .client
        .clear_context(pb::ClearContextRequest {
            session_id: busy.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    s.engine
        .turns()
        .interrupt(&ThreadId::from(busy.as_str()))
        .await
        .unwrap();

    let gone = s.session().await;
    s.client
        .destroy_session(pb::DestroySessionRequest {
            session_id: gone.clone(),
        })
        .await
        .unwrap();
    let err = s
        .client
        .clear_context(pb::ClearContextRequest { session_id: gone })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    let err = s
        .client
        .get_context_usage(pb::GetContextUsageRequest {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = s
        .client
        .compact_context(pb::CompactContextRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("session_id"), "{err:?}");
}
