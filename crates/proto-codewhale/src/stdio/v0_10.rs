//! CodeWhale 0.10's stdio methods, each onto [`crate::V0_10`]: the
//! library's names and aliases, its capability lists, `thread/interrupt`.
//! A `thread/message` or prompt writes its turn's frames as lines of their
//! own while the turn runs and is answered when it ends; Gantry's requests
//! run side by side, so an interrupt, an approval (`thread/approval`) or
//! an answer to a question (`app/request` `submit_user_input`) is taken
//! while a turn runs.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::methods::Outcome;
use super::rpc::RpcError;
use crate::CodeWhale;
use crate::wire::ApprovalDecisionRequest;
use crate::wire::v0_10::{AppRequest, MessageParams, ThreadRequest};

const THREAD_METHODS: &[&str] = &[
    "thread/request",
    "thread/create",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "thread/list",
    "thread/read",
    "thread/set_name",
    "thread/goal/set",
    "thread/goal/get",
    "thread/goal/clear",
    "thread/archive",
    "thread/unarchive",
    "thread/message",
    "thread/interrupt",
];

/// The library's capability flags, with Gantry's interactive turns.
fn flags() -> serde_json::Map<String, Value> {
    let flags = json!({
        "interactive_execution": true,
        "goal_execution": false,
        "tool_free_turns": true,
        "full_api_entrypoint": "codewhale app-server --http",
    });
    match flags {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

fn with_flags(extra: Value) -> Value {
    let mut out = flags();
    if let Value::Object(extra) = extra {
        out.extend(extra);
    }
    Value::Object(out)
}

#[derive(Deserialize)]
struct CreateParams {
    #[serde(default)]
    metadata: Value,
}

#[derive(Deserialize)]
struct ThreadIdParams {
    thread_id: String,
}

#[derive(Deserialize)]
struct KeyParams {
    key: String,
}

#[derive(Deserialize)]
struct KeyValueParams {
    key: String,
    value: String,
}

#[derive(Deserialize)]
struct ApprovalParams {
    thread_id: String,
    approval_id: String,
    #[serde(flatten)]
    decision: ApprovalDecisionRequest,
}

/// Params as given (the library's `parse_params`).
fn exact<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(e.to_string()))
}

/// Params, `{}` when none were given (the library's `params_or_object`).
fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    exact(if params.is_null() { json!({}) } else { params })
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::internal(e.to_string()))
}

/// Runs `method`; a turn's frames go to `out` as it runs.
pub(super) async fn call(
    cw: &CodeWhale,
    method: &str,
    params: Value,
    out: &mpsc::Sender<String>,
) -> Result<Outcome, RpcError> {
    let v = cw.v0_10();
    let thread = |req: ThreadRequest| async move {
        v.thread_request(req)
            .await
            .map_err(RpcError::from)
            .and_then(to_value)
    };
    let result = match method {
        "healthz" | "app/healthz" => {
            json!({ "status": "ok", "service": "gantry", "transport": "stdio" })
        }
        "capabilities" => {
            let methods: Vec<&str> = std::iter::once("healthz")
                .chain(std::iter::once("thread/capabilities"))
                .chain(THREAD_METHODS.iter().copied())
                .chain([
                    "app/capabilities",
                    "app/request",
                    "app/config/get",
                    "app/config/set",
                    "app/config/unset",
                    "app/config/list",
                    "app/config/reload",
                    "app/models",
                    "app/thread_loaded_list",
                    "prompt/capabilities",
                    "prompt/request",
                    "prompt/run",
                    "shutdown",
                ])
                .collect();
            with_flags(json!({
                "transport": "stdio",
                "families": ["thread/*", "app/*", "prompt/*"],
                "turn_image_inputs": true,
                "methods": methods,
            }))
        }
        "thread/capabilities" => with_flags(json!({
            "turn_image_inputs": true,
            "methods": THREAD_METHODS,
        })),
        "prompt/capabilities" => with_flags(json!({ "methods": ["prompt/request", "prompt/run"] })),
        "thread/request" => match exact::<ThreadRequest>(params)? {
            ThreadRequest::Message(p) => message(cw, p, out).await?,
            req => thread(req).await?,
        },
        "thread/create" => {
            let p: CreateParams = parse(params)?;
            thread(ThreadRequest::Create {
                metadata: p.metadata,
            })
            .await?
        }
        "thread/start" => thread(ThreadRequest::Start(parse(params)?)).await?,
        "thread/resume" => thread(ThreadRequest::Resume(parse(params)?)).await?,
        "thread/fork" => thread(ThreadRequest::Fork(parse(params)?)).await?,
        "thread/list" => thread(ThreadRequest::List(parse(params)?)).await?,
        "thread/read" => thread(ThreadRequest::Read(parse(params)?)).await?,
        "thread/set_name" | "thread/set-name" => {
            thread(ThreadRequest::SetName(parse(params)?)).await?
        }
        "thread/goal/set" | "thread/goal_set" | "thread/goal-set" => {
            thread(ThreadRequest::GoalSet(parse(params)?)).await?
        }
        "thread/goal/get" | "thread/goal_get" | "thread/goal-get" => {
            thread(ThreadRequest::GoalGet(parse(params)?)).await?
        }
        "thread/goal/clear" | "thread/goal_clear" | "thread/goal-clear" => {
            thread(ThreadRequest::GoalClear(parse(params)?)).await?
        }
        "thread/archive" => {
            let p: ThreadIdParams = parse(params)?;
            thread(ThreadRequest::Archive {
                thread_id: p.thread_id,
            })
            .await?
        }
        "thread/unarchive" => {
            let p: ThreadIdParams = parse(params)?;
            thread(ThreadRequest::Unarchive {
                thread_id: p.thread_id,
            })
            .await?
        }
        "thread/message" => message(cw, parse(params)?, out).await?,
        "thread/interrupt" => {
            let p: ThreadIdParams = parse(params)?;
            let interrupted = v.interrupt(&p.thread_id).await;
            json!({ "thread_id": p.thread_id, "interrupted": interrupted })
        }
        "thread/approval" => {
            let p: ApprovalParams = parse(params)?;
            let answer = cw
                .approve(&p.thread_id, &p.approval_id, &p.decision)
                .await?;
            to_value(answer)?
        }
        "app/capabilities" => to_value(v.app_request(AppRequest::Capabilities).await)?,
        "app/request" => to_value(v.app_request(exact(params)?).await)?,
        "app/config/get" => {
            let p: KeyParams = parse(params)?;
            to_value(v.app_request(AppRequest::ConfigGet { key: p.key }).await)?
        }
        "app/config/set" => {
            let p: KeyValueParams = parse(params)?;
            let req = AppRequest::ConfigSet {
                key: p.key,
                value: p.value,
            };
            to_value(v.app_request(req).await)?
        }
        "app/config/unset" => {
            let p: KeyParams = parse(params)?;
            to_value(v.app_request(AppRequest::ConfigUnset { key: p.key }).await)?
        }
        "app/config/list" => to_value(v.app_request(AppRequest::ConfigList).await)?,
        "app/config/reload" => to_value(v.app_request(AppRequest::ConfigReload).await)?,
        "app/models" => to_value(v.app_request(AppRequest::Models).await)?,
        "app/thread_loaded_list" | "app/thread-loaded-list" => {
            to_value(v.app_request(AppRequest::ThreadLoadedList).await)?
        }
        "prompt/request" | "prompt/run" => {
            let sink = frame_sink(out);
            // No traceparent: CodeWhale's JSON-RPC params have no `_meta`.
            let answer = v.prompt(exact(params)?, Some(&sink.0), None).await;
            sink.finish().await;
            to_value(answer?)?
        }
        "shutdown" => {
            return Ok(Outcome {
                result: json!({ "ok": true, "status": "stopped" }),
                follow: None,
                exit: true,
            });
        }
        _ => return Err(RpcError::method_not_found(method)),
    };
    Ok(Outcome {
        result,
        follow: None,
        exit: false,
    })
}

/// A message's turn, its frames written as it runs; the library's answer.
async fn message(
    cw: &CodeWhale,
    params: MessageParams,
    out: &mpsc::Sender<String>,
) -> Result<Value, RpcError> {
    let thread_id = params.thread_id.clone();
    let sink = frame_sink(out);
    // No traceparent: CodeWhale's JSON-RPC params have no `_meta`.
    let ran = cw.v0_10().message(params, Some(&sink.0), None).await;
    sink.finish().await;
    let ran = ran?;
    Ok(json!({
        "thread_id": thread_id,
        "status": "accepted",
        "thread": null,
        "threads": [],
        "model": null,
        "model_provider": null,
        "cwd": null,
        "approval_policy": null,
        "sandbox": null,
        "events": [],
        "data": { "turn_id": ran.turn_id },
    }))
}

/// A sink whose frames are written to `out` as lines, in order, before
/// the answer that follows [`FrameSink::finish`].
struct FrameSink(crate::FrameSink, tokio::task::JoinHandle<()>);

fn frame_sink(out: &mpsc::Sender<String>) -> FrameSink {
    let (tx, mut rx) = mpsc::channel::<Value>(64);
    let out = out.clone();
    let forward = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if out.send(line.to_string()).await.is_err() {
                return;
            }
        }
    });
    FrameSink(tx, forward)
}

impl FrameSink {
    /// Waits until every frame sent is in the output queue.
    async fn finish(self) {
        drop(self.0);
        let _ = self.1.await;
    }
}
