//! Reasoning blocks survive the event log: a thinking block's signature is
//! stored with its item and sent back on the next request, as Anthropic
//! requires, even when the history is rebuilt from the store.

use crate::common;

use std::sync::Arc;

use common::*;
use gantry_core::{CreateThread, EngineConfig, IfBusy, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::anthropic::AnthropicClient;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ItemKind, TurnStatus};
use serde_json::json;

#[tokio::test]
async fn anthropic_thinking_signatures_are_stored_and_sent_back() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call("list_dir", json!({})).with_reasoning("I should look at the files first."),
        Step::text("Nothing there."),
        Step::text("Still nothing."),
    ]))
    .unwrap();
    let mut config = ClientConfig::new(llm.base_url());
    config.api_key = Some("sk-ant-test".into());
    let client = AnthropicClient::new(config).unwrap();
    let models = Arc::new(SingleModel(Arc::new(client)));
    let engine = engine_with(dir.path(), models, EngineConfig::default()).await;
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().to_path_buf(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    for text in ["what is here?", "and now?"] {
        let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
        let turn = engine
            .turns()
            .send(&thread, text, IfBusy::Reject)
            .await
            .unwrap();
        assert_eq!(
            turn_status(&until_turn_ends(&mut sub, &turn).await),
            TurnStatus::Completed
        );
    }

    let view = engine.threads().read(&thread).await.unwrap();
    let signature = view.turns[0]
        .items
        .iter()
        .find_map(|i| match &i.kind {
            ItemKind::Reasoning {
                text, signature, ..
            } => {
                assert_eq!(text, "I should look at the files first.");
                signature.clone()
            }
            _ => None,
        })
        .expect("the reasoning item keeps its signature");

    // Round 2 (same turn) and the next turn (history rebuilt from items) both
    // send the thinking block back, signed, before the tool call.
    for request in [&llm.requests()[1], &llm.requests()[2]] {
        let assistant = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "assistant")
            .unwrap()
            .clone();
        assert_eq!(assistant["content"][0]["type"], "thinking");
        assert_eq!(assistant["content"][0]["signature"], signature.as_str());
        assert_eq!(assistant["content"][1]["type"], "tool_use");
    }
}
