//! 0.10's app requests: capabilities, configuration (0.10 lists keys as
//! paths, `providers.NAME.api_key`, and refuses a nested key it does not
//! know in its own words), the models, the loaded threads, and answers to
//! the agent's questions (`submit_user_input`), which Gantry delivers.

use gantry_core::{EngineError, ThreadQuery};
use gantry_types::{ThreadId, ThreadStatus, UserInputAnswer};
use serde_json::{Value, json};

use super::V0_10;
use super::views::thread;
use crate::wire::AppResponse;
use crate::wire::v0_10::{AppRequest, UserInputAnswer as WireAnswer};

/// What a loaded-thread listing holds at most.
const LOADED_LIMIT: usize = 50;

/// Threads looked through for a question's thread when no turn of this
/// server's asked it.
const SEARCHED_THREADS: usize = 200;

/// The frames a 0.10 listener sends: the library's three, and those of
/// the interactive turns Gantry runs.
const EVENTS: &[&str] = &[
    "response_start",
    "response_delta",
    "response_end",
    "tool_call_start",
    "tool_call_result",
    "exec_approval_request",
    "apply_patch_approval_request",
    "user_input_request",
    "exec_command_begin",
    "exec_command_output_delta",
    "exec_command_end",
    "patch_apply_begin",
    "patch_apply_end",
    "error",
];

fn done(data: Value) -> AppResponse {
    AppResponse {
        ok: true,
        data,
        events: Vec::new(),
    }
}

fn refused(data: Value) -> AppResponse {
    AppResponse {
        ok: false,
        data,
        events: Vec::new(),
    }
}

impl V0_10<'_> {
    /// Answers an app request; a refusal is `ok: false` with `data.error`.
    pub async fn app_request(&self, req: AppRequest) -> AppResponse {
        match req {
            AppRequest::Capabilities => done(json!({
                "routes": ["/thread", "/app", "/prompt", "/thread/{id}/events", "/events",
                           "/thread/{id}/approvals/{approval_id}", "/thread/{id}/interrupt",
                           "/v1/user-input/{thread_id}/{request_id}"],
                "interactive_execution": true,
                "goal_execution": false,
                "tool_free_turns": true,
                "full_api_entrypoint": "codewhale app-server --http",
                "config": ["get", "set", "unset", "list"],
                "events": EVENTS,
                "transport": "stdio+http",
                "config_path": self.cw.inner.config_path.get().map(|p| p.display().to_string()),
            })),
            AppRequest::ConfigGet { key } => {
                let value = self.cw.config_get(&key).ok().flatten();
                done(json!({ "key": key, "value": value }))
            }
            AppRequest::ConfigSet { key, value } => match self.cw.config_set(&key, &value).await {
                Ok(()) => done(json!({ "key": key, "value": value, "error": null })),
                Err(e) => {
                    let error = nested_key(&key).unwrap_or_else(|| e.to_string());
                    refused(json!({ "key": key, "value": value, "error": error }))
                }
            },
            AppRequest::ConfigUnset { key } => match self.cw.config_unset(&key).await {
                Ok(()) => done(json!({ "key": key, "error": null })),
                Err(e) => refused(json!({ "key": key, "error": e.to_string() })),
            },
            AppRequest::ConfigList => {
                let mut values = self.cw.config_list();
                // 0.10 names a provider's fields only by their path.
                values.remove("api_key");
                values.remove("base_url");
                done(json!({ "values": values }))
            }
            AppRequest::ConfigReload => refused(json!({
                "error": "config reload: Gantry applies each change as it is made; edits to \
                          its config file take effect when the server starts",
            })),
            AppRequest::Models => done(json!({ "models": self.cw.models() })),
            AppRequest::ThreadLoadedList => {
                let query = ThreadQuery {
                    archived: Some(false),
                    limit: LOADED_LIMIT,
                    cursor: None,
                };
                match self.cw.engine().threads().list(&query).await {
                    Ok(page) => {
                        let engine = self.cw.engine();
                        let threads: Vec<_> =
                            page.threads.iter().map(|t| thread(engine, t)).collect();
                        done(json!({ "threads": threads }))
                    }
                    Err(e) => refused(json!({ "error": e.to_string() })),
                }
            }
            AppRequest::SubmitUserInput {
                request_id,
                answers,
            } => self.submit_user_input(&request_id, answers).await,
        }
    }

    /// Delivers `answers` to the question `request_id` of whichever thread
    /// asked it. A refusal names the request (so HTTP answers 409).
    async fn submit_user_input(&self, request_id: &str, answers: Vec<WireAnswer>) -> AppResponse {
        let not_pending = |message: String| {
            refused(json!({
                "error": "user_input_request_not_found",
                "request_id": request_id,
                "message": message,
            }))
        };
        let Some(thread) = self.asker(request_id).await else {
            return not_pending(format!(
                "no question `{request_id}` waits for an answer (answered, timed out, or never asked)"
            ));
        };
        match self.answer(&thread, request_id, answers).await {
            Ok(recorded) => done(json!({
                "request_id": request_id,
                "thread_id": thread.0,
                "resolved": true,
                "answers": recorded,
            })),
            Err(EngineError::InvalidInput(message)) => refused(json!({
                "error": "invalid_user_input",
                "request_id": request_id,
                "message": message,
            })),
            Err(e) => not_pending(e.to_string()),
        }
    }

    /// Answers the question `request_id` of `thread` with the 0.10 answers:
    /// an option's label is picked, `Other` (or any answer to a question
    /// without options) is typed text. The answers as recorded, back in
    /// 0.10's shape.
    pub(crate) async fn answer(
        &self,
        thread: &ThreadId,
        request_id: &str,
        answers: Vec<WireAnswer>,
    ) -> Result<Vec<WireAnswer>, EngineError> {
        let view = self.cw.engine().threads().read(thread).await?;
        let questions = gantry_core::projection::user_inputs(&view)
            .find(|r| r.request_id == request_id)
            .map(|r| r.questions.to_vec())
            .unwrap_or_default();
        let mut grouped: Vec<UserInputAnswer> = Vec::new();
        for answer in answers {
            let picked = questions
                .iter()
                .any(|q| q.id == answer.id && q.options.iter().any(|o| o.label == answer.label));
            let at = match grouped.iter().position(|g| g.id == answer.id) {
                Some(at) => at,
                None => {
                    grouped.push(UserInputAnswer {
                        id: answer.id.clone(),
                        ..UserInputAnswer::default()
                    });
                    grouped.len() - 1
                }
            };
            if picked {
                grouped[at].selected.push(answer.label);
            } else {
                grouped[at].text = Some(answer.value);
            }
        }
        let recorded = self
            .cw
            .engine()
            .safety()
            .answer_user_input(thread, request_id, grouped)
            .await?;
        Ok(recorded
            .into_iter()
            .flat_map(|a| {
                let picked = a.selected.into_iter().map({
                    let id = a.id.clone();
                    move |label| WireAnswer {
                        id: id.clone(),
                        value: label.clone(),
                        label,
                    }
                });
                let typed = a.text.map(|value| WireAnswer {
                    id: a.id.clone(),
                    label: gantry_types::user_input::OTHER_LABEL.to_owned(),
                    value,
                });
                picked.chain(typed).collect::<Vec<_>>()
            })
            .collect())
    }

    /// The thread whose pending question is `request_id`: one a turn of
    /// this server asked, else one found among the running threads.
    async fn asker(&self, request_id: &str) -> Option<ThreadId> {
        if let Some(thread) = self.cw.asked_by(request_id) {
            return Some(thread);
        }
        let query = ThreadQuery {
            archived: Some(false),
            limit: SEARCHED_THREADS,
            cursor: None,
        };
        let page = self.cw.engine().threads().list(&query).await.ok()?;
        for t in page
            .threads
            .iter()
            .filter(|t| t.status == ThreadStatus::Running)
        {
            let Ok(view) = self.cw.engine().threads().read(&t.id).await else {
                continue;
            };
            if gantry_core::projection::pending_user_inputs(&view)
                .any(|r| r.request_id == request_id)
            {
                return Some(t.id.clone());
            }
        }
        None
    }
}

/// The library's refusal of a dotted key it has no place for, word for
/// word (for a key Gantry refused); `None` for an undotted one or one of
/// the provider registry's, whose refusal says more.
fn nested_key(key: &str) -> Option<String> {
    if !key.contains('.') || key.starts_with("providers.") {
        return None;
    }
    let (table, field) = key.rsplit_once('.')?;
    Some(format!(
        "`config set` does not support nested key `{key}`; edit `{field}` in the [{table}] \
         table of config.toml instead (use a TOML value of the documented type). No value was \
         changed."
    ))
}
