//! Memory over the wire: store, retrieve (access counted), search (text,
//! tags, importance, recency, limit), statistics by class, clearing,
//! deleting one, summaries by the session's model, and the errors.

use crate::common;

use std::collections::HashMap;

use common::Server;
use proto_code_agent::pb;
use tonic::Code;

/// A memory to store.
fn memory(
    content: &str,
    memory_type: pb::MemoryType,
    importance: f32,
    tags: &[&str],
) -> pb::MemoryItem {
    pb::MemoryItem {
        content: content.into(),
        importance,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        memory_type: memory_type.into(),
        ..Default::default()
    }
}

/// Stores `memory` in `session`; its id.
async fn store(s: &mut Server, session: &str, memory: pb::MemoryItem) -> String {
    let stored = s
        .client
        .store_memory(pb::StoreMemoryRequest {
            session_id: session.into(),
            memory: Some(memory),
        })
        .await
        .expect("store")
        .into_inner();
    assert!(stored.success);
    stored.memory_id
}

async fn search(s: &mut Server, req: pb::SearchMemoriesRequest) -> pb::SearchMemoriesResponse {
    s.client
        .search_memories(req)
        .await
        .expect("search")
        .into_inner()
}

async fn stats(s: &mut Server, session: &str) -> pb::MemoryStats {
    s.client
        .get_memory_stats(pb::GetMemoryStatsRequest {
            session_id: session.into(),
        })
        .await
        .expect("stats")
        .into_inner()
        .stats
        .expect("stats set")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memories_are_stored_retrieved_and_counted_by_class() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let mut fact = memory(
        "The deploy script is scripts/ship.sh",
        pb::MemoryType::Procedural,
        0.9,
        &["Deploy", "ops"],
    );
    fact.id = "deploy-howto".into();
    fact.metadata = HashMap::from([("source".to_owned(), "README".to_owned())]);
    let id = store(&mut s, &session, fact).await;
    assert_eq!(id, "deploy-howto", "a client-chosen id is kept");
    let fresh = store(
        &mut s,
        &session,
        memory(
            "the CI went red on Monday",
            pb::MemoryType::Episodic,
            0.4,
            &[],
        ),
    )
    .await;
    assert!(!fresh.is_empty(), "an empty id gets a fresh one");
    store(
        &mut s,
        &session,
        memory(
            "currently editing main.rs",
            pb::MemoryType::Working,
            0.2,
            &[],
        ),
    )
    .await;

    let got = s
        .client
        .retrieve_memory(pb::RetrieveMemoryRequest {
            session_id: session.clone(),
            memory_id: "deploy-howto".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .memory
        .expect("the memory");
    assert_eq!(got.content, "The deploy script is scripts/ship.sh");
    assert_eq!(got.memory_type(), pb::MemoryType::Procedural);
    assert_eq!(got.tags, ["deploy", "ops"], "tags are lowercased");
    assert_eq!(got.metadata["source"], "README");
    assert_eq!(got.access_count, 1, "retrieving counts an access");
    assert!(got.last_accessed.is_some());
    assert!(got.timestamp > 0, "a zero timestamp means now");

    let unknown = s
        .client
        .retrieve_memory(pb::RetrieveMemoryRequest {
            session_id: session.clone(),
            memory_id: "never-stored".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(unknown.memory, None, "an unknown id is an empty answer");

    let counted = stats(&mut s, &session).await;
    assert_eq!(
        (
            counted.long_term_count,
            counted.short_term_count,
            counted.working_count
        ),
        (1, 1, 1)
    );
    // Memories belong to their session.
    let other = s.session().await;
    assert_eq!(stats(&mut s, &other).await, pb::MemoryStats::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_filters_by_text_tags_importance_recency_and_limit() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    store(
        &mut s,
        &session,
        memory(
            "deploy with ship.sh",
            pb::MemoryType::Procedural,
            0.9,
            &["ops"],
        ),
    )
    .await;
    store(
        &mut s,
        &session,
        memory(
            "deploy needs the VPN",
            pb::MemoryType::Semantic,
            0.3,
            &["ops", "network"],
        ),
    )
    .await;
    let mut old = memory(
        "deploy failed last year",
        pb::MemoryType::Episodic,
        0.5,
        &[],
    );
    old.timestamp = 1_600_000_000_000;
    store(&mut s, &session, old).await;
    store(
        &mut s,
        &session,
        memory("the user prefers tabs", pb::MemoryType::Semantic, 0.6, &[]),
    )
    .await;

    let base = pb::SearchMemoriesRequest {
        session_id: session.clone(),
        ..Default::default()
    };
    let text = search(
        &mut s,
        pb::SearchMemoriesRequest {
            query: Some("deploy".into()),
            ..base.clone()
        },
    )
    .await;
    assert_eq!(text.total_count, 3);
    assert!(
        text.memories.iter().all(|m| m.content.contains("deploy")),
        "{text:?}"
    );

    let tagged = search(
        &mut s,
        pb::SearchMemoriesRequest {
            tags: vec!["OPS".into(), "network".into()],
            ..base.clone()
        },
    )
    .await;
    let contents: Vec<_> = tagged.memories.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["deploy needs the VPN"]);

    let important = search(
        &mut s,
        pb::SearchMemoriesRequest {
            min_importance: Some(0.55),
            ..base.clone()
        },
    )
    .await;
    let contents: Vec<_> = important
        .memories
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        contents,
        ["deploy with ship.sh", "the user prefers tabs"],
        "by importance"
    );

    let recent = search(
        &mut s,
        pb::SearchMemoriesRequest {
            query: Some("deploy".into()),
            recent_only: true,
            ..base.clone()
        },
    )
    .await;
    assert_eq!(
        recent.total_count, 2,
        "last year's memory is not recent: {recent:?}"
    );

    let limited = search(
        &mut s,
        pb::SearchMemoriesRequest {
            limit: 1,
            ..base.clone()
        },
    )
    .await;
    assert_eq!((limited.memories.len(), limited.total_count), (1, 4));
    let default_limit = search(&mut s, base).await;
    assert_eq!(
        default_limit.memories.len(),
        4,
        "limit 0 is the engine's default"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_deletes_only_the_selected_classes() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    store(
        &mut s,
        &session,
        memory("a fact", pb::MemoryType::Semantic, 0.5, &[]),
    )
    .await;
    store(
        &mut s,
        &session,
        memory("a how-to", pb::MemoryType::Procedural, 0.5, &[]),
    )
    .await;
    store(
        &mut s,
        &session,
        memory("an event", pb::MemoryType::Episodic, 0.5, &[]),
    )
    .await;
    store(
        &mut s,
        &session,
        memory("scratch", pb::MemoryType::Working, 0.5, &[]),
    )
    .await;

    let nothing = s
        .client
        .clear_memories(pb::ClearMemoriesRequest {
            session_id: session.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(nothing.success);
    assert_eq!(nothing.cleared_count, 0, "nothing selected clears nothing");

    let cleared = s
        .client
        .clear_memories(pb::ClearMemoriesRequest {
            session_id: session.clone(),
            clear_long_term: true,
            clear_working: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cleared.success);
    assert_eq!(cleared.cleared_count, 3);
    let left = stats(&mut s, &session).await;
    assert_eq!(
        (
            left.long_term_count,
            left.short_term_count,
            left.working_count
        ),
        (0, 1, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_memory_input_is_refused_naming_the_field() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let store_err = |memory: Option<pb::MemoryItem>, session: &str| pb::StoreMemoryRequest {
        session_id: session.into(),
        memory,
    };
    let good = memory("x", pb::MemoryType::Semantic, 0.5, &[]);
    let cases = [
        (store_err(None, &session), "memory"),
        (
            store_err(
                Some(pb::MemoryItem {
                    content: "  ".into(),
                    ..good.clone()
                }),
                &session,
            ),
            "memory.content",
        ),
        (
            store_err(
                Some(pb::MemoryItem {
                    importance: 1.5,
                    ..good.clone()
                }),
                &session,
            ),
            "memory.importance",
        ),
        (
            store_err(
                Some(pb::MemoryItem {
                    memory_type: 99,
                    ..good.clone()
                }),
                &session,
            ),
            "memory.memory_type",
        ),
        (
            store_err(
                Some(pb::MemoryItem {
                    id: "not an id!".into(),
                    ..good.clone()
                }),
                &session,
            ),
            "memory",
        ),
        (store_err(Some(good.clone()), ""), "session_id"),
    ];
    for (req, field) in cases {
        let err = s.client.store_memory(req.clone()).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{req:?}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")),
            "{req:?}: {err:?}"
        );
    }

    let err = s
        .client
        .search_memories(pb::SearchMemoriesRequest {
            session_id: session.clone(),
            min_importance: Some(-1.0),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("min_importance:"), "{err:?}");
    let err = s
        .client
        .retrieve_memory(pb::RetrieveMemoryRequest {
            session_id: session.clone(),
            memory_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("memory_id:"), "{err:?}");

    let err = s
        .client
        .store_memory(store_err(Some(good), "nope"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = s
        .client
        .get_memory_stats(pb::GetMemoryStatsRequest {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

async fn delete(s: &mut Server, session: &str, memory_id: &str) -> bool {
    s.client
        .delete_memory(pb::DeleteMemoryRequest {
            session_id: session.into(),
            memory_id: memory_id.into(),
        })
        .await
        .expect("delete")
        .into_inner()
        .success
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_memory_is_deleted_by_id_and_only_where_the_session_sees_it() {
    let mut s = Server::start(vec![]).await;
    let session = s.session().await;
    let other = s.session().await;
    let gone = store(
        &mut s,
        &session,
        memory("a fact", pb::MemoryType::Semantic, 0.5, &["x"]),
    )
    .await;
    store(
        &mut s,
        &session,
        memory("another fact", pb::MemoryType::Semantic, 0.5, &["x"]),
    )
    .await;

    assert!(
        !delete(&mut s, &other, &gone).await,
        "another session does not see it"
    );
    assert!(delete(&mut s, &session, &gone).await);
    assert!(!delete(&mut s, &session, &gone).await, "deleted once");
    assert_eq!(stats(&mut s, &session).await.long_term_count, 1);
    let retrieved = s
        .client
        .retrieve_memory(pb::RetrieveMemoryRequest {
            session_id: session.clone(),
            memory_id: gone.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(retrieved.memory, None);
    let found = search(
        &mut s,
        pb::SearchMemoriesRequest {
            session_id: session.clone(),
            tags: vec!["x".into()],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(found.total_count, 1);

    let err = s
        .client
        .delete_memory(pb::DeleteMemoryRequest {
            session_id: session.clone(),
            memory_id: " ".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("memory_id"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memories_are_summarized_by_the_session_model_and_the_summary_is_kept() {
    let answer = "Deploys go through scripts/ship.sh; the on-call rota is in ops.md.";
    let mut s = Server::start(vec![gantry_testkit::Step::text(answer)]).await;
    let session = s.session().await;
    for (content, tags) in [
        ("The deploy script is scripts/ship.sh", &["ops"][..]),
        ("The on-call rota lives in ops.md", &["ops", "team"][..]),
        ("The parser is hand-written", &["code"][..]),
    ] {
        store(
            &mut s,
            &session,
            memory(content, pb::MemoryType::Semantic, 0.5, tags),
        )
        .await;
    }

    let summary = s
        .client
        .summarize_memories(pb::SummarizeMemoriesRequest {
            session_id: session.clone(),
            tags: vec!["ops".into()],
            limit: 0,
            recent_hours: Some(1),
        })
        .await
        .expect("summarize")
        .into_inner();
    assert_eq!(summary.summary, answer);
    assert_eq!(summary.memory_count, 2);
    assert!(summary.stored);

    // One model request, with the tagged memories and no tools.
    let requests = s.llm.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].body.to_string();
    assert!(
        body.contains("scripts/ship.sh") && body.contains("ops.md"),
        "{body}"
    );
    assert!(
        !body.contains("hand-written"),
        "untagged memory left out: {body}"
    );
    assert!(requests[0].body.get("tools").is_none(), "{body}");

    // The summary is a memory of the session; the conversation is untouched.
    let kept = s
        .client
        .retrieve_memory(pb::RetrieveMemoryRequest {
            session_id: session.clone(),
            memory_id: summary.summary_memory_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .memory
        .expect("the summary is stored");
    assert_eq!(kept.content, answer);
    assert_eq!(kept.tags, vec!["summary".to_owned()]);
    assert_eq!(kept.memory_type, i32::from(pb::MemoryType::Semantic));
    assert_eq!(
        kept.metadata.get("source_count").map(String::as_str),
        Some("2")
    );
    let messages = s
        .client
        .get_messages(pb::GetMessagesRequest {
            session_id: session.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(messages.total_count, 0, "{:?}", messages.messages);

    // Nothing matching: A3S's answer, no model request, nothing stored.
    let none = s
        .client
        .summarize_memories(pb::SummarizeMemoriesRequest {
            session_id: session.clone(),
            tags: vec!["nothing-has-this".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(none.memory_count, 0);
    assert!(!none.stored);
    assert_eq!(none.summary_memory_id, "");
    assert_eq!(none.summary, "No memories found matching the criteria.");
    assert_eq!(s.llm.requests().len(), 1);
}
