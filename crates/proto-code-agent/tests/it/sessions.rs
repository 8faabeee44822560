//! Sessions over the wire: create (client id, LLM config, starting
//! conversation), get, list, configure, messages, destroy, and the errors.

use crate::common;

use common::Server;
use proto_code_agent::pb;
use proto_code_agent::pb::content_block::Block;
use tonic::Code;

fn msg(role: &str, content: &str) -> pb::Message {
    pb::Message {
        role: role.into(),
        content: content.into(),
        metadata: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_created_read_listed_configured_and_destroyed() {
    let mut s = Server::start(vec![]).await;
    let llm = s.llm_config();
    let created = s
        .client
        .create_session(pb::CreateSessionRequest {
            session_id: Some("review-42".into()),
            config: Some(pb::SessionConfig {
                name: "review".into(),
                llm: Some(llm.clone()),
                system_prompt: "be brief".into(),
                max_context_length: 64_000,
                ..pb::SessionConfig::default()
            }),
            initial_context: vec![
                msg("system", "you review Rust"),
                msg("user", "hello"),
                msg("assistant", "hi, what shall I review?"),
            ],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.session_id, "review-42");
    let session = created.session.unwrap();
    assert_eq!(session.state(), pb::SessionState::Active);
    let config = session.config.unwrap();
    assert_eq!(config.name, "review");
    assert_eq!(config.workspace, s.workspace().to_string_lossy());
    assert_eq!(config.system_prompt, "be brief\n\nyou review Rust");
    assert_eq!(config.max_context_length, 64_000);
    let got_llm = config.llm.unwrap();
    assert_eq!(
        (got_llm.provider.as_str(), got_llm.model.as_str()),
        ("openai", "gpt-4.1-mini")
    );
    assert_eq!(got_llm.api_key, "", "the key is never sent back");
    assert_eq!(session.context_usage.unwrap().message_count, 2);

    let again = s
        .client
        .create_session(pb::CreateSessionRequest {
            session_id: Some("review-42".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists, "{again:?}");

    let other = s.session().await;
    let listed: Vec<String> = s
        .client
        .list_sessions(pb::ListSessionsRequest {})
        .await
        .unwrap()
        .into_inner()
        .sessions
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert!(
        listed.contains(&"review-42".to_owned()) && listed.contains(&other),
        "{listed:?}"
    );

    // The starting conversation, paged from its start.
    let page = s
        .client
        .get_messages(pb::GetMessagesRequest {
            session_id: "review-42".into(),
            limit: Some(1),
            offset: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((page.total_count, page.has_more), (2, true));
    assert_eq!(page.messages[0].role, "user");
    assert!(
        matches!(&page.messages[0].content[0].block, Some(Block::Text(t)) if t.text == "hello")
    );
    let rest = s
        .client
        .get_messages(pb::GetMessagesRequest {
            session_id: "review-42".into(),
            limit: None,
            offset: Some(1),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rest.messages.len(), 1);
    assert!(!rest.has_more);
    assert_eq!(rest.messages[0].role, "assistant");

    let configured = s
        .client
        .configure_session(pb::ConfigureSessionRequest {
            session_id: "review-42".into(),
            config: Some(pb::SessionConfig {
                system_prompt: "be thorough".into(),
                llm: Some(pb::LlmConfig {
                    model: "gpt-5".into(),
                    ..llm
                }),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner()
        .session
        .unwrap()
        .config
        .unwrap();
    assert_eq!(configured.system_prompt, "be thorough");
    assert_eq!(configured.llm.unwrap().model, "gpt-5");
    assert_eq!(
        configured.name, "review",
        "empty fields leave settings as they were"
    );

    s.client
        .destroy_session(pb::DestroySessionRequest {
            session_id: "review-42".into(),
        })
        .await
        .unwrap();
    // Gone over this service, as in A3S (the thread stays in the engine).
    let gone = s
        .client
        .get_session(pb::GetSessionRequest {
            session_id: "review-42".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound, "{gone:?}");
    let thread = s.engine.threads().read(&"review-42".into()).await.unwrap();
    assert!(thread.thread.archived);
    let listed = s
        .client
        .list_sessions(pb::ListSessionsRequest {})
        .await
        .unwrap()
        .into_inner()
        .sessions;
    assert!(listed.iter().all(|x| x.session_id != "review-42"));
    let refused = s
        .client
        .configure_session(pb::ConfigureSessionRequest {
            session_id: "review-42".into(),
            config: Some(pb::SessionConfig {
                name: "late".into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::NotFound, "{refused:?}");
    assert!(refused.message().contains("destroyed"), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_session_input_is_named() {
    let mut s = Server::start(vec![]).await;
    let missing = s
        .client
        .get_session(pb::GetSessionRequest {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let destroy_missing = s
        .client
        .destroy_session(pb::DestroySessionRequest {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(destroy_missing.code(), Code::NotFound);
    let empty = s
        .client
        .get_messages(pb::GetMessagesRequest::default())
        .await
        .unwrap_err();
    assert_eq!(empty.code(), Code::InvalidArgument);
    assert!(empty.message().contains("session_id"));

    let cases = [
        (
            pb::CreateSessionRequest {
                session_id: Some("has space".into()),
                ..Default::default()
            },
            "thread id",
        ),
        (
            pb::CreateSessionRequest {
                config: Some(pb::SessionConfig {
                    workspace: "/dev/null/ws".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "workspace",
        ),
        (
            pb::CreateSessionRequest {
                config: Some(pb::SessionConfig {
                    llm: Some(pb::LlmConfig {
                        provider: "openai".into(),
                        model: "m".into(),
                        base_url: "localhost:1234".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "llm.base_url",
        ),
        (
            pb::CreateSessionRequest {
                initial_context: vec![msg("tool", "x")],
                ..Default::default()
            },
            "initial_context[0].role",
        ),
    ];
    for (request, field) in cases {
        let err = s.client.create_session(request).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains(field), "{field}: {err:?}");
    }
    let session = s.session().await;
    // A workspace that cannot be created (under a file).
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let err = s
        .client
        .configure_session(pb::ConfigureSessionRequest {
            session_id: session,
            config: Some(pb::SessionConfig {
                workspace: file.join("ws").to_string_lossy().into_owned(),
                ..Default::default()
            }),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("workspace"), "{err:?}");
}
