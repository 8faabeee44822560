//! Messages (start, reject, steer, queue, wait), interrupt, pause and
//! resume, approvals and external tasks.

use gantry_testkit::Step;
use serde_json::json;

use crate::common::{assert_error, shell, start};

#[tokio::test]
async fn a_message_to_a_busy_thread_is_rejected_steered_or_queued_as_asked() {
    // The first turn waits on an approval, so it is surely running.
    let s = start(vec![
        shell("touch first.txt"),
        Step::text("First done."),
        Step::text("Queued done."),
    ])
    .await;
    let id = s.thread(json!({"approval": "untrusted"})).await;
    let (status, first) = s
        .post(&format!("/v1/threads/{id}/messages"), json!({"text": "go"}))
        .await;
    assert_eq!(status, 202, "{first}");
    let turn = first["turn_id"].as_str().unwrap().to_owned();
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    let asked = events
        .until(|e| e.event == "item_started" && e.data["payload"]["item"]["type"] == "approval")
        .await;
    let approval = asked.last().unwrap().data["payload"]["item"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let busy = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "again"}),
        )
        .await;
    assert_error(&busy, 409, "conflict");
    let (status, steered) = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "also this", "if_busy": "steer"}),
        )
        .await;
    assert_eq!(
        (status, steered["turn_id"].as_str()),
        (202, Some(turn.as_str()))
    );
    let (status, queued) = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "then this", "if_busy": "queue"}),
        )
        .await;
    assert_eq!(status, 202);
    assert_ne!(queued["turn_id"].as_str(), Some(turn.as_str()));

    let (_, pending) = s.get("/v1/approvals").await;
    assert_eq!(pending[0]["approval_id"], approval.as_str(), "{pending}");
    let bad = s
        .post(
            &format!("/v1/threads/{id}/approvals/{approval}"),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(bad.1["error"]["details"]["field"], "decision");
    let reason = s
        .post(
            &format!("/v1/threads/{id}/approvals/{approval}"),
            json!({"decision": "approve", "reason": "why not"}),
        )
        .await;
    assert_eq!(reason.1["error"]["details"]["field"], "reason");
    let (status, answered) = s
        .post(
            &format!("/v1/threads/{id}/approvals/{approval}"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["state"], "answered");
    let again = s
        .post(
            &format!("/v1/threads/{id}/approvals/{approval}"),
            json!({"decision": "deny"}),
        )
        .await;
    assert_error(&again, 409, "conflict");
    assert_error(
        &s.post(
            &format!("/v1/threads/{id}/approvals/nope"),
            json!({"decision": "approve"}),
        )
        .await,
        404,
        "not_found",
    );

    // The queued message runs as the next turn.
    let queued_turn = queued["turn_id"].as_str().unwrap().to_owned();
    events
        .until(|e| {
            e.event == "turn_completed" && e.data["payload"]["turn_id"] == queued_turn.as_str()
        })
        .await;
    assert!(
        s.workspace.join("first.txt").exists(),
        "the approved command ran"
    );
    let (_, pending) = s.get("/v1/approvals").await;
    assert_eq!(pending, json!([]));
}

#[tokio::test]
async fn interrupt_pause_and_resume_act_on_the_thread() {
    let s = start(vec![shell("touch never.txt"), Step::text("after resume")]).await;
    let id = s.thread(json!({"approval": "untrusted"})).await;
    let (_, none) = s
        .post(&format!("/v1/threads/{id}/interrupt"), json!({}))
        .await;
    assert_eq!(none, json!({}), "nothing was running");
    s.post(&format!("/v1/threads/{id}/messages"), json!({"text": "go"}))
        .await;
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    events
        .until(|e| e.event == "item_started" && e.data["payload"]["item"]["type"] == "approval")
        .await;
    let (status, stopped) = s
        .post(&format!("/v1/threads/{id}/interrupt"), json!({}))
        .await;
    assert_eq!(status, 200);
    assert!(stopped["turn_id"].is_string());
    let ended = events.until(|e| e.event == "turn_completed").await;
    assert_eq!(
        ended.last().unwrap().data["payload"]["status"],
        "interrupted"
    );
    assert!(!s.workspace.join("never.txt").exists());

    let (status, paused) = s.post(&format!("/v1/threads/{id}/pause"), json!({})).await;
    assert_eq!((status, &paused["paused"]), (200, &json!(true)));
    let (status, resumed) = s.post(&format!("/v1/threads/{id}/resume"), json!({})).await;
    assert_eq!((status, &resumed["paused"]), (200, &json!(false)));
    let (status, done) = s
        .post(
            &format!("/v1/threads/{id}/messages?wait=true"),
            json!({"text": "again"}),
        )
        .await;
    assert_eq!(
        (status, &done["turn"]["status"]),
        (200, &json!("completed"))
    );

    for route in ["interrupt", "pause", "resume", "messages"] {
        let got = s
            .post(&format!("/v1/threads/ghost/{route}"), json!({"text": "x"}))
            .await;
        assert_error(&got, 404, "not_found");
    }
    let empty = s
        .post(&format!("/v1/threads/{id}/messages"), json!({"text": "  "}))
        .await;
    assert_error(&empty, 422, "validation_failed");
    assert_eq!(empty.1["error"]["details"]["field"], "text");
    let mode = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "x", "if_busy": "later"}),
        )
        .await;
    assert_eq!(mode.1["error"]["details"]["field"], "if_busy");
    let missing = s
        .send("POST", &format!("/v1/threads/{id}/messages"), None)
        .await;
    assert_error(&missing, 422, "validation_failed");
    let (_, tasks) = s.get(&format!("/v1/threads/{id}/tasks")).await;
    assert_eq!(tasks, json!([]));
    let task = s
        .post(
            &format!("/v1/threads/{id}/tasks/t1"),
            json!({"output": "x"}),
        )
        .await;
    assert_error(&task, 404, "not_found");
    let both = s
        .post(
            &format!("/v1/threads/{id}/tasks/t1"),
            json!({"output": "x", "error": "y"}),
        )
        .await;
    assert_error(&both, 422, "validation_failed");
}

#[tokio::test]
async fn a_messages_images_reach_the_model_and_bad_ones_are_a_bad_field() {
    let s = start(vec![Step::text("A pixel.")]).await;
    let id = s.thread(json!({})).await;
    let png = "iVBORw0KGgo=";
    let (status, done) = s
        .post(
            &format!("/v1/threads/{id}/messages?wait=true"),
            json!({"text": "what is this?", "images": [{"media_type": "image/png", "data": png}]}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    let images = s.llm.requests()[0].images();
    assert_eq!(images.len(), 1);
    assert_eq!(
        (images[0].media_type.as_str(), images[0].data.as_str()),
        ("image/png", png)
    );
    let bad = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "", "images": [{"media_type": "image/tiff", "data": png}]}),
        )
        .await;
    assert_error(&bad, 422, "validation_failed");
    assert_eq!(bad.1["error"]["details"]["field"], "images", "{}", bad.1);
}

#[tokio::test]
async fn images_as_large_as_documented_are_taken_and_larger_ones_refused_by_the_engine() {
    let s = start(vec![Step::text("Two big pictures.")]).await;
    let id = s.thread(json!({})).await;
    // Two images of the largest size, in base64: far above axum's 2 MB.
    let largest = "A".repeat(gantry_types::MAX_IMAGE_BYTES / 3 * 4);
    let image = json!({"media_type": "image/png", "data": largest});
    let (status, done) = s
        .post(
            &format!("/v1/threads/{id}/messages?wait=true"),
            json!({"text": "compare", "images": [image, image]}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["turn"]["status"], "completed", "{done}");
    assert_eq!(s.llm.requests()[0].images().len(), 2);
    // One byte more than the largest image is the engine's refusal, a bad
    // field, not the transport's.
    let over = "A".repeat((gantry_types::MAX_IMAGE_BYTES / 3 + 1) * 4);
    let too_big = s
        .post(
            &format!("/v1/threads/{id}/messages"),
            json!({"text": "", "images": [{"media_type": "image/png", "data": over}]}),
        )
        .await;
    assert_error(&too_big, 422, "validation_failed");
    assert_eq!(
        too_big.1["error"]["details"]["field"], "images",
        "{}",
        too_big.1
    );
}
