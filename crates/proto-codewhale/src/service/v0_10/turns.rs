//! 0.10's turns: a thread `message` or a `prompt` runs one turn and is
//! answered when it ends. Its frames are the library's: one response per
//! turn (`THREAD:TURN`), `response_start`, the agent's text as
//! `response_delta`s, `response_end`; stdio gets each as a line of its
//! own while the turn runs (`{"type": ...}`), HTTP gets them in the
//! answer. A turn that failed or was interrupted ends its response, then
//! answers -32603 with why, as the library does.
//!
//! `allowed_tools: []` runs a tool-free turn, the only one the library's
//! transports run. Gantry is the engine behind them and answers approvals
//! and questions there too, so a message without `allowed_tools` runs
//! with the thread's tools and one naming some runs with those; its
//! approval and `user_input_request` frames go out like the others.
//! A prompt stays tool-free, as the library's.

use gantry_core::{CreateThread, EngineError, IfBusy, UserInput};
use gantry_types::{ImagePart, ThreadId, ThreadPolicy, TurnLimits};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Refusal, V0_10};
use crate::frames::{FrameFeed, ResumePoint};
use crate::wire::v0_10::{ImageInput, MessageParams, PromptRequest};
use crate::wire::{EventFrame, PromptResponse, ResponseChannel};

/// Where a turn's frames go as they happen: each as the line stdio
/// writes (`{"type": "response_delta", ...}`).
pub type FrameSink = mpsc::Sender<Value>;

/// A turn that ran to its end.
#[derive(Debug, Clone)]
pub struct TurnAnswer {
    /// Its id.
    pub turn_id: String,
    /// The model that ran it.
    pub model: String,
    /// The agent's text, every delta of it.
    pub text: String,
    /// Its frames.
    pub frames: Vec<EventFrame>,
}

impl V0_10<'_> {
    /// Runs a message's turn on its thread (which must exist); the turn
    /// keeps `trace_parent`, the request's W3C `traceparent` (already
    /// checked), if it came with one.
    pub async fn message(
        &self,
        params: MessageParams,
        sink: Option<&FrameSink>,
        trace_parent: Option<String>,
    ) -> Result<TurnAnswer, Refusal> {
        self.existing(&params.thread_id).await?;
        let limits = TurnLimits {
            allowed_tools: params.allowed_tools,
            max_output_tokens: params.max_output_tokens.map(|n| n.get()),
        };
        let input = UserInput {
            trace_parent,
            ..input(params.input, &params.images, limits)
        };
        self.run(&ThreadId(params.thread_id), input, sink).await
    }

    /// Runs a prompt's tool-free turn, on its thread or one of its own;
    /// the turn keeps `trace_parent` as [`V0_10::message`]'s does.
    pub async fn prompt(
        &self,
        req: PromptRequest,
        sink: Option<&FrameSink>,
        trace_parent: Option<String>,
    ) -> Result<PromptResponse, Refusal> {
        if req.prompt.trim().is_empty() {
            return Err(Refusal::invalid_params("prompt must not be empty"));
        }
        if !matches!(req.allowed_tools.as_deref(), Some([])) {
            return Err(Refusal::interactive_unsupported());
        }
        let thread = match &req.thread_id {
            Some(id) => ThreadId(self.existing(id).await?.thread.id.0.clone()),
            None => {
                let policy = self
                    .cw
                    .policy_of(ThreadPolicy::default(), None, None, true)
                    .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?;
                let create = CreateThread {
                    cwd: self.cw.inner.workspace.clone(),
                    model: req.model.clone(),
                    policy,
                    ..CreateThread::default()
                };
                self.cw
                    .engine()
                    .threads()
                    .create(create)
                    .await
                    .map_err(|e| Refusal::runtime_unavailable(e.to_string()))?
                    .id
            }
        };
        let limits = TurnLimits {
            allowed_tools: Some(Vec::new()),
            max_output_tokens: req.max_output_tokens.map(|n| n.get()),
        };
        let input = UserInput {
            trace_parent,
            ..input(req.prompt, &req.images, limits)
        };
        let ran = self.run(&thread, input, sink).await?;
        Ok(PromptResponse {
            output: ran.text,
            model: ran.model,
            events: ran.frames,
        })
    }

    /// Interrupts the turn `thread` runs; whether one ran.
    pub async fn interrupt(&self, thread: &str) -> bool {
        let id = ThreadId(thread.to_owned());
        matches!(self.cw.engine().turns().interrupt(&id).await, Ok(Some(_)))
    }

    /// Sends `input` to `thread` and follows its turn to the end.
    async fn run(
        &self,
        thread: &ThreadId,
        input: UserInput,
        sink: Option<&FrameSink>,
    ) -> Result<TurnAnswer, Refusal> {
        let engine = self.cw.engine();
        let unavailable = |e: EngineError| Refusal::of(e, &thread.0);
        let start = engine.threads().read(thread).await.map_err(unavailable)?;
        let mut feed = FrameFeed::open(engine, thread, ResumePoint::after(start.thread.last_seq))
            .await
            .map_err(unavailable)?;
        let turn = engine
            .turns()
            .send_input(thread, input, IfBusy::Reject)
            .await
            .map_err(unavailable)?;
        let response_id = format!("{}:{}", thread.0, turn.0);
        let mut out = Frames {
            sink,
            all: Vec::new(),
        };
        out.push(EventFrame::ResponseStart {
            response_id: response_id.clone(),
        })
        .await;
        let mut text = String::new();
        let mut inside = false;
        let failure = loop {
            let Some(batch) = feed.next().await.map_err(unavailable)? else {
                break Some("the server is shutting down".to_owned());
            };
            let mut ended = None;
            for framed in batch {
                match framed.frame {
                    EventFrame::TurnStarted { turn_id } => inside |= turn_id == turn.0,
                    EventFrame::TurnComplete { turn_id } if turn_id == turn.0 => ended = Some(None),
                    EventFrame::TurnAborted { turn_id, reason } if turn_id == turn.0 => {
                        let why = if reason == "interrupted" {
                            "turn interrupted".to_owned()
                        } else {
                            reason
                        };
                        ended = Some(Some(why));
                    }
                    _ if !inside => {}
                    // One response a turn: the rounds' own are not the client's.
                    EventFrame::ResponseStart { .. }
                    | EventFrame::ResponseEnd { .. }
                    | EventFrame::TurnComplete { .. }
                    | EventFrame::TurnAborted { .. } => {}
                    EventFrame::ResponseDelta { delta, channel, .. } => {
                        if channel == ResponseChannel::Text {
                            text.push_str(&delta);
                            out.push(EventFrame::ResponseDelta {
                                response_id: response_id.clone(),
                                delta,
                                channel,
                            })
                            .await;
                        }
                    }
                    EventFrame::UserInputRequest { request } => {
                        self.cw.note_question(&request.request_id, thread);
                        out.push(EventFrame::UserInputRequest { request }).await;
                    }
                    frame => out.push(frame).await,
                }
            }
            if let Some(failure) = ended {
                break failure;
            }
        };
        out.push(EventFrame::ResponseEnd { response_id }).await;
        self.cw.forget_questions(thread);
        if let Some(why) = failure {
            return Err(Refusal::internal(why));
        }
        let model = engine
            .threads()
            .read(thread)
            .await
            .map(|v| v.thread.model.clone())
            .unwrap_or_default();
        Ok(TurnAnswer {
            turn_id: turn.0,
            model,
            text,
            frames: out.all,
        })
    }
}

/// A turn's frames so far, each also sent to the sink as it comes.
struct Frames<'a> {
    sink: Option<&'a FrameSink>,
    all: Vec<EventFrame>,
}

impl Frames<'_> {
    async fn push(&mut self, frame: EventFrame) {
        if let Some(sink) = self.sink {
            // A client that went away misses lines, not the turn.
            let _ = sink.send(stdio_line(&frame)).await;
        }
        self.all.push(frame);
    }
}

/// A frame as stdio writes it while a turn runs: tagged `type`, where the
/// frames of an answer are tagged `event`.
pub(crate) fn stdio_line(frame: &EventFrame) -> Value {
    let mut line = serde_json::to_value(frame).unwrap_or_default();
    if let Some(object) = line.as_object_mut()
        && let Some(kind) = object.remove("event")
    {
        object.insert("type".to_owned(), kind);
    }
    line
}

/// A turn's input: its text, images and limits.
fn input(text: String, images: &[ImageInput], limits: TurnLimits) -> UserInput {
    UserInput {
        text,
        images: images
            .iter()
            .map(|i| ImagePart::new(i.mime.clone(), i.data_base64.clone()))
            .collect(),
        limits,
        ..UserInput::default()
    }
}
