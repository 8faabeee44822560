//! Images in user messages: kept in the log with the text, sent to the
//! model as image parts, refused for a model the catalog says reads none
//! (and left out, with a note, of a history such a model is given); a
//! model's refusal ends the turn as refused.

use crate::common;

use std::sync::Arc;

use common::*;
use gantry_core::{
    CreateThread, EngineConfig, EngineError, IfBusy, ModelResolver, SingleModel, UserInput,
};
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{ClientConfig, ModelClient};
use gantry_testkit::{MockLlm, RecordedImage, Reply, Script, Step};
use gantry_types::{
    ImagePart, ItemKind, Modalities, ModelInfo, ThreadSettingsPatch, TurnFailure, TurnStatus,
};

/// A one-pixel PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// One client for every model; `text-only` reads no images.
struct Catalogued(SingleModel);

impl ModelResolver for Catalogued {
    fn resolve(&self, model: &str) -> Result<Arc<dyn ModelClient>, String> {
        self.0.resolve(model)
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        let input = match model {
            "text-only" => vec!["text".to_owned()],
            "vision" => vec!["text".to_owned(), "image".to_owned()],
            _ => return None,
        };
        Some(ModelInfo {
            id: model.to_owned(),
            modalities: Modalities {
                input,
                output: vec!["text".to_owned()],
            },
            ..ModelInfo::default()
        })
    }
}

async fn engine(dir: &std::path::Path, llm: &MockLlm) -> gantry_core::Engine {
    let client = OpenAiChatClient::new(ClientConfig::new(llm.base_url())).expect("client");
    let models = Arc::new(Catalogued(SingleModel(Arc::new(client))));
    engine_with(dir, models, EngineConfig::default()).await
}

#[tokio::test]
async fn images_reach_the_model_and_the_log_and_a_text_only_model_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![
        Step::text("A single pixel."),
        Step::text("Still a pixel, I was told."),
    ]))
    .unwrap();
    let engine = engine(dir.path(), &llm).await;
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().to_path_buf(),
            model: Some("vision".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    let input = UserInput {
        text: "what is this?".into(),
        images: vec![ImagePart::new("image/png", PNG)],
        ..UserInput::default()
    };
    let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
    let turn = engine
        .turns()
        .send_input(&thread, input.clone(), IfBusy::Reject)
        .await
        .unwrap();
    assert_eq!(
        turn_status(&until_turn_ends(&mut sub, &turn).await),
        TurnStatus::Completed
    );
    let png = RecordedImage {
        media_type: "image/png".into(),
        data: PNG.into(),
    };
    assert_eq!(llm.requests()[0].images(), vec![png]);
    // Kept in the log: a fresh engine on the same store reads it back.
    engine.shutdown().await.unwrap();
    drop(engine);
    let engine = self::engine(dir.path(), &llm).await;
    let view = engine.threads().read(&thread).await.unwrap();
    let stored = view.turns[0].items.iter().find_map(|i| match &i.kind {
        ItemKind::UserMessage { images, .. } => Some(images.clone()),
        _ => None,
    });
    assert_eq!(stored, Some(input.images.clone()));

    // A model that reads no images: a new message with one is refused...
    let patch = ThreadSettingsPatch {
        model: Some("text-only".into()),
        ..Default::default()
    };
    engine.threads().configure(&thread, patch).await.unwrap();
    let refused = engine
        .turns()
        .send_input(&thread, input, IfBusy::Reject)
        .await
        .unwrap_err();
    let EngineError::InvalidInput(why) = refused else {
        panic!("refused as invalid input: {refused:?}");
    };
    assert!(why.contains("text-only takes no image input"), "{why}");
    // ...and the one in its history is left out, with a note.
    let (mut sub, turn) = (
        engine.feeds().subscribe(&thread, 1).await.unwrap(),
        engine
            .turns()
            .send(&thread, "and now?", IfBusy::Reject)
            .await
            .unwrap(),
    );
    until_turn_ends(&mut sub, &turn).await;
    let second = &llm.requests()[1];
    assert!(second.images().is_empty());
    let first_message = second.body["messages"][0]["content"].to_string();
    assert!(
        first_message.contains("an image (image/png) was left out: text-only reads no images"),
        "{first_message}"
    );
}

#[tokio::test]
async fn malformed_or_oversized_images_are_refused_before_anything_runs() {
    let h = Harness::new(vec![]).await;
    let send = |images: Vec<ImagePart>| {
        let engine = h.engine.clone();
        let thread = h.thread.id.clone();
        async move {
            engine
                .turns()
                .send_input(
                    &thread,
                    UserInput {
                        text: "look".into(),
                        images,
                        ..UserInput::default()
                    },
                    IfBusy::Reject,
                )
                .await
        }
    };
    let svg = send(vec![ImagePart::new("image/svg+xml", "PHN2Zz4=")]).await;
    assert!(matches!(svg, Err(EngineError::InvalidInput(m)) if m.contains("not supported")));
    let big = "A".repeat((gantry_types::MAX_IMAGE_BYTES / 3 + 1) * 4);
    let big = send(vec![ImagePart::new("image/png", big)]).await;
    assert!(matches!(big, Err(EngineError::InvalidInput(m)) if m.contains("at most")));
    assert_eq!(h.llm.request_count(), 0);
    assert!(h.view().await.turns.is_empty());
}

#[tokio::test]
async fn a_models_refusal_ends_the_turn_as_refused_with_its_words_kept() {
    let refusal = Step::Reply(Reply {
        text: "I can't help with that.".into(),
        finish_reason: Some("content_filter".into()),
        ..Reply::default()
    });
    let h = Harness::new(vec![refusal]).await;
    let (turn, seen) = h.run_turn("do something bad").await;
    assert_eq!(turn_status(&seen), TurnStatus::Failed);
    let view = h.view().await;
    let ended = &view.turns.iter().find(|t| t.turn.id == turn).unwrap().turn;
    assert_eq!(ended.failure, Some(TurnFailure::ModelRefused));
    let said = completed_kinds(&seen).into_iter().find_map(|k| match k {
        ItemKind::AgentMessage { text } => Some(text),
        _ => None,
    });
    assert_eq!(said.as_deref(), Some("I can't help with that."));
}
