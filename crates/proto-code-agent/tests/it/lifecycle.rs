//! Lifecycle over the wire: Initialize's workspace and environment,
//! capabilities from the real engine.

use crate::common;

use common::Server;
use gantry_testkit::Step;
use proto_code_agent::pb;
use serde_json::json;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_sets_the_environment_of_the_agents_commands() {
    let mut s = Server::start(vec![
        Step::tool_call("shell", json!({"command": "echo \"token=$DEPLOY_TOKEN\""})),
        Step::text("done"),
    ])
    .await;
    let bad = s
        .client
        .initialize(pb::InitializeRequest {
            workspace: String::new(),
            env: [("NOT=VALID".to_owned(), "x".to_owned())].into(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("env"), "{bad:?}");
    let init = s
        .client
        .initialize(pb::InitializeRequest {
            workspace: s.workspace().to_string_lossy().into_owned(),
            env: [("DEPLOY_TOKEN".to_owned(), "t-123".to_owned())].into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(init.success);
    let session = s.session().await;
    let answer = s
        .client
        .generate(pb::GenerateRequest {
            session_id: session,
            messages: vec![pb::Message {
                role: "user".into(),
                content: "deploy".into(),
                metadata: Default::default(),
            }],
        })
        .await
        .unwrap()
        .into_inner();
    let output = &answer.tool_calls[0].result.as_ref().unwrap().output;
    assert!(output.contains("token=t-123"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_come_from_the_engine() {
    let mut s = Server::start(vec![]).await;
    let caps = s
        .client
        .get_capabilities(pb::GetCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner();
    let tools: Vec<&str> = caps.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["bash", "read"] {
        assert!(tools.contains(&expected), "{tools:?}");
    }
    let shell = caps.tools.iter().find(|t| t.name == "bash").unwrap();
    assert!(
        shell.parameters.contains(&"command".to_owned()),
        "{shell:?}"
    );
    assert!(
        caps.models
            .iter()
            .any(|m| m.provider == common::PROVIDER && m.model == "test-model"),
        "{:?}",
        caps.models
    );
    assert_eq!(caps.metadata["default_model"], "mock/test-model");
}
