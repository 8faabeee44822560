//! SSE: a thread's and all threads' events, live deltas, resuming with
//! `Last-Event-ID` with nothing missed and nothing twice.

use gantry_testkit::Step;
use serde_json::json;

use crate::common::{delta_text, start};

const ANSWER: &str = "The quick brown fox jumps over the lazy dog, twice over.";

#[tokio::test]
async fn a_thread_stream_resumes_mid_answer_with_nothing_missed_or_twice() {
    let s = start(vec![
        Step::text(ANSWER).with_chunk_size(4).with_delay_ms(20),
    ])
    .await;
    let id = s.thread(json!({})).await;
    let mut events = s.events(&format!("/v1/threads/{id}/events"), None).await;
    let created = events.next().await.unwrap();
    assert_eq!(
        (created.event.as_str(), created.id.as_str()),
        ("thread_created", "1")
    );
    s.post(&format!("/v1/threads/{id}/messages"), json!({"text": "go"}))
        .await;
    // Read up to the third delta, then drop the connection.
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|e: &&crate::common::Sse| e.event == "delta")
        .count()
        < 3
    {
        seen.push(events.next().await.unwrap());
    }
    drop(events);
    let last = seen.last().unwrap().id.clone();
    assert_eq!(
        last.split('/').count(),
        3,
        "a delta's id is SEQ/ITEM/OFFSET: {last}"
    );
    let mut resumed = s
        .events(&format!("/v1/threads/{id}/events"), Some(&last))
        .await;
    let rest = resumed.until(|e| e.event == "turn_completed").await;
    let text = delta_text(&seen) + &delta_text(&rest);
    assert_eq!(text, ANSWER, "the answer, each byte once");
    let completed = rest
        .iter()
        .find(|e| {
            e.event == "item_completed" && e.data["payload"]["item"]["type"] == "agent_message"
        })
        .expect("the message completed");
    assert_eq!(completed.data["payload"]["item"]["text"], ANSWER);
    // Seqs are dense across the reconnect.
    let seqs: Vec<u64> = std::iter::once(&created)
        .chain(&seen)
        .chain(&rest)
        .filter(|e| e.event != "delta")
        .map(|e| e.id.parse().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());

    // From a seq: the events after it only.
    let mut after = s
        .events(&format!("/v1/threads/{id}/events?after=2"), None)
        .await;
    assert_eq!(after.next().await.unwrap().id, "3");
}

#[tokio::test]
async fn the_all_threads_stream_carries_cursors_and_resumes_from_one() {
    let s = start(vec![Step::text("one"), Step::text("two")]).await;
    let mut all = s.events("/v1/events", None).await;
    let a = s.thread(json!({})).await;
    s.post(
        &format!("/v1/threads/{a}/messages?wait=true"),
        json!({"text": "go"}),
    )
    .await;
    let first = all.until(|e| e.event == "turn_completed").await;
    assert_eq!(first[0].event, "thread_created");
    let cursor = first.last().unwrap().id.clone();
    drop(all);
    let b = s.thread(json!({})).await;
    s.post(
        &format!("/v1/threads/{b}/messages?wait=true"),
        json!({"text": "go"}),
    )
    .await;
    let mut resumed = s.events("/v1/events", Some(&cursor)).await;
    let next = resumed.until(|e| e.event == "turn_completed").await;
    assert_eq!(next[0].event, "thread_created");
    assert_eq!(
        next[0].data["thread_id"],
        b.as_str(),
        "nothing of thread a again"
    );
    let cursors: Vec<u64> = first
        .iter()
        .chain(&next)
        .filter(|e| e.event != "delta")
        .map(|e| e.id.parse().unwrap())
        .collect();
    assert!(cursors.windows(2).all(|w| w[1] == w[0] + 1), "{cursors:?}");
}

#[tokio::test]
async fn a_bad_last_event_id_or_thread_is_refused() {
    let s = start(vec![]).await;
    let resp = s
        .http
        .get(s.url("/v1/events"))
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    crate::common::assert_error(&crate::common::read(resp).await, 400, "bad_request");
    let resp = s
        .http
        .get(s.url("/v1/threads/ghost/events"))
        .send()
        .await
        .unwrap();
    crate::common::assert_error(&crate::common::read(resp).await, 404, "not_found");
}
