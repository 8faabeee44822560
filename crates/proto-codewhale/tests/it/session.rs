//! A real session through the service (tool rounds, an approval asked and
//! answered, goals, fork, archive, app requests, a prompt): every answer
//! and every frame Gantry emits round-trips through the real crate's
//! types unchanged; a stream resumed inside an item's output gets exactly
//! the rest of it.

use codewhale_protocol as real;
use gantry_testkit::{Step, ToolCallSpec};
use gantry_types::ThreadId;
use proto_codewhale::frames::{FrameFeed, Framed, ResumePoint};
use proto_codewhale::wire::{
    AppRequest, ApprovalDecisionRequest, EventFrame, PromptRequest, ThreadGoalGetParams,
    ThreadGoalSetParams, ThreadListParams, ThreadReadParams, ThreadRequest, ThreadResponse,
    ThreadSetNameParams, ThreadStartParams,
};
use serde_json::json;

use crate::common::{HANG_GUARD, start};
use crate::golden::round_trips;

/// Frames of `feed` up to and including the first `until` frame.
async fn frames_until(feed: &mut FrameFeed, until: &str) -> Vec<Framed> {
    let mut out = Vec::new();
    loop {
        let batch = tokio::time::timeout(HANG_GUARD, feed.next())
            .await
            .unwrap_or_else(|_| panic!("no `{until}` frame came"))
            .expect("feed")
            .expect("engine running");
        for framed in batch {
            let name = serde_json::to_value(&framed.frame).unwrap()["event"].clone();
            out.push(framed);
            if name == until {
                return out;
            }
        }
    }
}

fn thread_answer(response: &ThreadResponse) {
    round_trips::<real::ThreadResponse>(response);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_and_frame_of_a_session_reads_in_the_real_crate() {
    let s = start(vec![
        Step::tool_calls(vec![ToolCallSpec::new(
            "shell",
            json!({"command": "touch golden.txt"}),
        )]),
        Step::tool_call("read_file", json!({"path": "golden.txt"})),
        Step::text("All set.").with_reasoning("Checking the file."),
        Step::text("One-shot."),
    ])
    .await;
    let cw = &s.cw;
    let started = cw
        .thread_request(ThreadRequest::Start(ThreadStartParams {
            approval_policy: Some("unless_trusted".into()),
            ..ThreadStartParams::default()
        }))
        .await
        .expect("start");
    thread_answer(&started);
    let id = started.thread_id.clone();
    let mut feed = FrameFeed::open(cw.engine(), &ThreadId(id.clone()), ResumePoint::default())
        .await
        .expect("feed");
    let accepted = cw
        .thread_request(ThreadRequest::Message {
            thread_id: id.clone(),
            input: "make it".into(),
            if_busy: None,
        })
        .await
        .expect("message");
    assert_eq!(accepted.status, "accepted");
    thread_answer(&accepted);

    let mut frames = frames_until(&mut feed, "exec_approval_request").await;
    let Some(EventFrame::ExecApprovalRequest { request }) = frames.last().map(|f| &f.frame) else {
        unreachable!("frames_until ends at its frame");
    };
    let decision = ApprovalDecisionRequest {
        decision: "approved".into(),
        remember: false,
    };
    let approved = cw
        .approve(&id, &request.approval_id, &decision)
        .await
        .expect("approve");
    assert_eq!(approved.status, "ok");
    thread_answer(&approved);
    frames.extend(frames_until(&mut feed, "turn_complete").await);
    assert!(s.dir.path().join("ws/golden.txt").exists());

    let names: Vec<String> = frames
        .iter()
        .map(|f| {
            serde_json::to_value(&f.frame).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in [
        "turn_started",
        "response_start",
        "tool_call_start",
        "exec_approval_request",
        "exec_command_begin",
        "exec_command_end",
        "tool_call_result",
        "response_delta",
        "response_end",
        "turn_complete",
    ] {
        assert!(names.iter().any(|n| n == kind), "no {kind} in {names:?}");
    }
    for framed in &frames {
        round_trips::<real::EventFrame>(&framed.frame);
        if let EventFrame::ToolCallResult { output, .. } = &framed.frame {
            round_trips::<real::ToolOutput>(output);
        }
    }

    // The thread's latest checkpoint, as the reference keeps it: its
    // latest user message.
    let read = cw
        .thread_request(ThreadRequest::Read(ThreadReadParams {
            thread_id: id.clone(),
        }))
        .await
        .expect("read");
    let checkpoint = &read.data["checkpoint"];
    assert_eq!(checkpoint["checkpoint_id"], "latest", "{checkpoint}");
    assert_eq!(checkpoint["state"]["reason"], "thread_message");
    assert_eq!(checkpoint["state"]["role"], "user");
    assert_eq!(checkpoint["state"]["preview"], "make it");
    let history = read.data["history"].as_array().expect("history");
    let asked = history.iter().find(|m| m["role"] == "user").expect("asked");
    assert_eq!(checkpoint["state"]["message_id"], asked["id"]);
    assert_eq!(started.data["checkpoint"], serde_json::Value::Null);

    let goal = cw
        .thread_request(ThreadRequest::GoalSet(ThreadGoalSetParams {
            thread_id: id.clone(),
            objective: "Ship".into(),
            token_budget: Some(1000),
        }))
        .await
        .expect("goal");
    for answer in [
        started,
        goal,
        cw.thread_request(ThreadRequest::GoalGet(ThreadGoalGetParams {
            thread_id: id.clone(),
        }))
        .await
        .expect("goal get"),
        cw.thread_request(ThreadRequest::GoalClear(ThreadGoalGetParams {
            thread_id: id.clone(),
        }))
        .await
        .expect("goal clear"),
        read,
        cw.thread_request(ThreadRequest::SetName(ThreadSetNameParams {
            thread_id: id.clone(),
            name: "golden".into(),
        }))
        .await
        .expect("name"),
        cw.thread_request(ThreadRequest::Fork(
            serde_json::from_value(json!({"thread_id": id})).unwrap(),
        ))
        .await
        .expect("fork"),
        cw.thread_request(ThreadRequest::Archive {
            thread_id: id.clone(),
        })
        .await
        .expect("archive"),
        cw.thread_request(ThreadRequest::List(ThreadListParams {
            include_archived: true,
            limit: None,
        }))
        .await
        .expect("list"),
        cw.thread_request(ThreadRequest::Resume(
            serde_json::from_value(json!({"thread_id": "nope"})).unwrap(),
        ))
        .await
        .expect("resume"),
    ] {
        thread_answer(&answer);
    }

    for request in [
        AppRequest::Capabilities,
        AppRequest::ConfigGet {
            key: "providers.mock.api_key".into(),
        },
        AppRequest::ConfigSet {
            key: "sandbox_mode".into(),
            value: "read-only".into(),
        },
        AppRequest::ConfigUnset {
            key: "sandbox_mode".into(),
        },
        AppRequest::ConfigList,
        AppRequest::Models,
        AppRequest::ThreadLoadedList,
    ] {
        let answer = cw.app_request(request).await;
        assert!(answer.ok, "{answer:?}");
        assert!(!serde_json::to_string(&answer).unwrap().contains("secret"));
        round_trips::<real::AppResponse>(&answer);
    }

    let prompt = cw
        .prompt(PromptRequest {
            thread_id: None,
            prompt: "once".into(),
            model: None,
        })
        .await
        .expect("prompt");
    assert_eq!(prompt.output, "One-shot.");
    round_trips::<real::PromptResponse>(&prompt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_inside_an_answer_gets_exactly_the_rest() {
    let text = "The quick brown fox jumps over the lazy dog, twice over.";
    let s = start(vec![Step::text(text).with_chunk_size(3).with_delay_ms(5)]).await;
    let cw = &s.cw;
    let id = cw
        .thread_request(ThreadRequest::Create {
            metadata: json!(null),
        })
        .await
        .expect("create")
        .thread_id;
    let thread = ThreadId(id.clone());
    let mut first = FrameFeed::open(cw.engine(), &thread, ResumePoint::default())
        .await
        .expect("feed");
    cw.thread_request(ThreadRequest::Message {
        thread_id: id.clone(),
        input: "say it".into(),
        if_busy: None,
    })
    .await
    .expect("message");
    let seen = frames_until(&mut first, "response_delta").await;
    drop(first);
    let last = seen.last().expect("a delta");
    // Inside the item: the point names it and how much of it was seen.
    let point = last.position.clone();
    assert_eq!(point.items.len(), 1, "{point:?}");
    assert_eq!(ResumePoint::parse(&point.encode()), Some(point.clone()));
    let mut resumed = FrameFeed::open(cw.engine(), &thread, point)
        .await
        .expect("resumed feed");
    let rest = frames_until(&mut resumed, "turn_complete").await;
    let answer: String = seen
        .iter()
        .chain(&rest)
        .filter_map(|f| match &f.frame {
            EventFrame::ResponseDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answer, text);
    // Nothing the client had comes twice.
    let starts = rest
        .iter()
        .filter(|f| {
            matches!(
                f.frame,
                EventFrame::ResponseStart { .. } | EventFrame::TurnStarted { .. }
            )
        })
        .count();
    assert_eq!(starts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_beside_parallel_commands_repeats_neither() {
    // Two commands of one round stream at once; the client drops the
    // stream while both are part way through.
    let slow = |tag: &str| format!("for i in 1 2 3 4 5 6; do echo {tag}$i; sleep 0.05; done");
    let s = start(vec![
        Step::tool_calls(vec![
            ToolCallSpec::new("shell", json!({"command": slow("a")})),
            ToolCallSpec::new("shell", json!({"command": slow("b")})),
        ]),
        Step::text("Both ran."),
    ])
    .await;
    let cw = &s.cw;
    let id = cw
        .thread_request(ThreadRequest::Start(ThreadStartParams {
            approval_policy: Some("never".into()),
            ..ThreadStartParams::default()
        }))
        .await
        .expect("start")
        .thread_id;
    let thread = ThreadId(id.clone());
    let mut first = FrameFeed::open(cw.engine(), &thread, ResumePoint::default())
        .await
        .expect("feed");
    cw.thread_request(ThreadRequest::Message {
        thread_id: id.clone(),
        input: "run both".into(),
        if_busy: None,
    })
    .await
    .expect("message");
    // Until output of both commands has come.
    let mut seen = Vec::new();
    while !(has_output(&seen, "a1") && has_output(&seen, "b1")) {
        seen.extend(frames_until(&mut first, "exec_command_output_delta").await);
    }
    drop(first);
    let point = seen.last().expect("a frame").position.clone();
    assert_eq!(
        point.items.len(),
        2,
        "both commands are in the point: {point:?}"
    );
    assert_eq!(ResumePoint::parse(&point.encode()), Some(point.clone()));
    let mut resumed = FrameFeed::open(cw.engine(), &thread, point)
        .await
        .expect("resumed feed");
    let rest = frames_until(&mut resumed, "turn_complete").await;
    for tag in ["a", "b"] {
        let output: String = seen
            .iter()
            .chain(&rest)
            .filter_map(|f| match &f.frame {
                EventFrame::ExecCommandOutputDelta { command, delta } if command == &slow(tag) => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect();
        let expected: String = (1..=6).map(|i| format!("{tag}{i}\n")).collect();
        assert_eq!(output, expected, "command {tag}'s output, once each");
    }
}

/// Whether some command's output so far holds `text`.
fn has_output(frames: &[Framed], text: &str) -> bool {
    frames.iter().any(|f| {
        matches!(&f.frame, EventFrame::ExecCommandOutputDelta { delta, .. } if delta.contains(text))
    })
}

#[tokio::test]
async fn thread_defaults_set_over_config_survive_a_restart() {
    use proto_codewhale::CodeWhale;
    let s = start(vec![]).await;
    for (key, value) in [("approval_policy", "never"), ("sandbox_mode", "read-only")] {
        let set =
            s.cw.app_request(AppRequest::ConfigSet {
                key: key.into(),
                value: value.into(),
            })
            .await;
        assert!(set.ok, "{key}: {:?}", set.data);
    }
    let unset =
        s.cw.app_request(AppRequest::ConfigUnset {
            key: "sandbox_mode".into(),
        })
        .await;
    assert!(unset.ok, "{:?}", unset.data);
    // A new process over the same store reads what was stored.
    let reopened = CodeWhale::open(s.cw.engine().clone(), s.dir.path().to_owned())
        .await
        .expect("reopen");
    let listed = reopened.app_request(AppRequest::ConfigList).await;
    assert_eq!(listed.data["values"]["approval_policy"], "never");
    assert!(
        listed.data["values"].get("sandbox_mode").is_none(),
        "unset stays unset: {}",
        listed.data
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structured_turn_streams_no_internal_tool_call() {
    // A structured answer asked over another protocol on a CodeWhale
    // thread: the engine's submit tool never shows as the agent's call.
    let s = start(vec![Step::tool_call(
        "submit_output",
        json!({"name": "Ada"}),
    )])
    .await;
    let cw = &s.cw;
    let started = cw
        .thread_request(ThreadRequest::Start(ThreadStartParams::default()))
        .await
        .expect("start");
    let id = ThreadId(started.thread_id.clone());
    let mut feed = FrameFeed::open(cw.engine(), &id, ResumePoint::default())
        .await
        .expect("feed");
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"]});
    let output = cw
        .engine()
        .structured()
        .generate(&id, gantry_core::StructuredRequest::new("who?", schema))
        .await
        .expect("structured output");
    assert_eq!(output.payload, json!({"name": "Ada"}));
    let frames = frames_until(&mut feed, "turn_complete").await;
    let names: Vec<_> = frames
        .iter()
        .map(|f| serde_json::to_value(&f.frame).expect("frame")["event"].clone())
        .collect();
    let text = serde_json::to_string(&names).expect("JSON");
    assert!(!text.contains("tool"), "{text}");
    for framed in &frames {
        let frame = serde_json::to_string(&framed.frame).expect("frame");
        assert!(!frame.contains("submit_output"), "{frame}");
    }
}
