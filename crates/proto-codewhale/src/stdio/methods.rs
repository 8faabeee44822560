//! The methods, each onto the service: the real server's names and
//! aliases (`thread/set-name`, `thread/goal/set`, `thread/goal_set`,
//! `thread/goal-set`, `prompt/run`, ...) and Gantry's `thread/interrupt`
//! and `thread/approval`.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::rpc::RpcError;
use crate::CodeWhale;
use crate::wire::{
    AppRequest, ApprovalDecisionRequest, IfBusy, PromptRequest, ThreadRequest, ThreadResponse,
};

/// What a method answered, and the thread whose frames to follow from
/// which seq (a message that started or joined a turn).
pub(super) struct Outcome {
    pub result: Value,
    pub follow: Option<(String, u64)>,
    pub exit: bool,
}

impl Outcome {
    fn value(result: Value) -> Self {
        Self {
            result,
            follow: None,
            exit: false,
        }
    }
}

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
    "thread/approval",
];

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
struct MessageParams {
    thread_id: String,
    input: String,
    #[serde(default)]
    if_busy: Option<IfBusy>,
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

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    // A method without params takes `{}`.
    let params = if params.is_null() { json!({}) } else { params };
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(e.to_string()))
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::internal(e.to_string()))
}

/// Runs `method`.
pub(super) async fn call(cw: &CodeWhale, method: &str, params: Value) -> Result<Outcome, RpcError> {
    let thread = |req: ThreadRequest| async move { thread_call(cw, req).await };
    Ok(match method {
        "healthz" | "app/healthz" => {
            Outcome::value(json!({ "status": "ok", "service": "gantry", "transport": "stdio" }))
        }
        "capabilities" => Outcome::value(json!({
            "transport": "stdio",
            "families": ["thread/*", "app/*", "prompt/*"],
            "methods": THREAD_METHODS.iter().chain(&[
                "app/capabilities", "app/request", "app/config/get", "app/config/set",
                "app/config/unset", "app/config/list", "app/models", "app/thread_loaded_list",
                "prompt/request", "prompt/run", "shutdown",
            ]).collect::<Vec<_>>(),
        })),
        "thread/capabilities" => Outcome::value(json!({ "methods": THREAD_METHODS })),
        "prompt/capabilities" => {
            Outcome::value(json!({ "methods": ["prompt/request", "prompt/run"] }))
        }
        "thread/request" => thread(parse(params)?).await?,
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
        "thread/goal/set" | "thread/goal_set" | "thread/goal-set" | "goal_set" | "goal-set" => {
            thread(ThreadRequest::GoalSet(parse(params)?)).await?
        }
        "thread/goal/get" | "thread/goal_get" | "thread/goal-get" | "goal_get" | "goal-get" => {
            thread(ThreadRequest::GoalGet(parse(params)?)).await?
        }
        "thread/goal/clear" | "thread/goal_clear" | "thread/goal-clear" | "goal_clear"
        | "goal-clear" => thread(ThreadRequest::GoalClear(parse(params)?)).await?,
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
        "thread/message" => {
            let p: MessageParams = parse(params)?;
            thread(ThreadRequest::Message {
                thread_id: p.thread_id,
                input: p.input,
                if_busy: p.if_busy,
            })
            .await?
        }
        "thread/interrupt" => {
            let p: ThreadIdParams = parse(params)?;
            Outcome::value(to_value(cw.interrupt(&p.thread_id).await?)?)
        }
        "thread/approval" | "approval/decision" => {
            let p: ApprovalParams = parse(params)?;
            let answer = cw
                .approve(&p.thread_id, &p.approval_id, &p.decision)
                .await?;
            Outcome::value(to_value(answer)?)
        }
        "app/capabilities" => app(cw, AppRequest::Capabilities).await?,
        "app/request" => app(cw, parse(params)?).await?,
        "app/config/get" => {
            let p: KeyParams = parse(params)?;
            app(cw, AppRequest::ConfigGet { key: p.key }).await?
        }
        "app/config/set" => {
            let p: KeyValueParams = parse(params)?;
            app(
                cw,
                AppRequest::ConfigSet {
                    key: p.key,
                    value: p.value,
                },
            )
            .await?
        }
        "app/config/unset" => {
            let p: KeyParams = parse(params)?;
            app(cw, AppRequest::ConfigUnset { key: p.key }).await?
        }
        "app/config/list" => app(cw, AppRequest::ConfigList).await?,
        "app/models" => app(cw, AppRequest::Models).await?,
        "app/thread_loaded_list" | "app/thread-loaded-list" => {
            app(cw, AppRequest::ThreadLoadedList).await?
        }
        "prompt/request" | "prompt/run" => {
            let req: PromptRequest = parse(params)?;
            Outcome::value(to_value(cw.prompt(req).await?)?)
        }
        "shutdown" => Outcome {
            result: json!({ "ok": true, "status": "stopped" }),
            follow: None,
            exit: true,
        },
        _ => return Err(RpcError::method_not_found(method)),
    })
}

async fn app(cw: &CodeWhale, req: AppRequest) -> Result<Outcome, RpcError> {
    Ok(Outcome::value(to_value(cw.app_request(req).await)?))
}

/// A thread request; a message's thread is followed from before it.
async fn thread_call(cw: &CodeWhale, req: ThreadRequest) -> Result<Outcome, RpcError> {
    let before = match &req {
        ThreadRequest::Message { thread_id, .. } => cw
            .view(thread_id)
            .await?
            .map(|v| (thread_id.clone(), v.thread.last_seq)),
        _ => None,
    };
    let response: ThreadResponse = cw.thread_request(req).await?;
    let follow = before.filter(|_| response.status == "accepted");
    Ok(Outcome {
        result: to_value(response)?,
        follow,
        exit: false,
    })
}
