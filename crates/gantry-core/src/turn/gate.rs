//! What stands between a tool call and its run: the pause switch, the
//! thread's policy (allow, deny, or ask a human), and the lane's handler
//! (the engine, or a client completing an external task).

use std::time::{Duration, Instant};

use gantry_policy::{ToolRequest, Verdict};
use gantry_types::{HandlerMode, Item, ItemKind, ItemStatus, LaneHandler, new_id};
use gantry_types::{Refusal, SandboxMode};
use serde_json::Value;
use tokio::sync::oneshot;

use super::{Loop, TurnMsg};
use crate::actor::{ExternalTaskInfo, Resolution, Waiting};

/// What the gate lets through.
pub(super) enum Gate {
    /// Run the call.
    Run,
    /// Do not run it, for this reason.
    Refuse(Refusal),
    /// Do not run it; the turn ends (an abort at an approval, or an interrupt).
    Stop,
}

impl Loop<'_> {
    /// Waits while the thread is paused. False if the turn was interrupted meanwhile.
    pub(super) async fn wait_unpaused(&self) -> bool {
        let mut live = self.live.clone();
        loop {
            if self.cancel.is_cancelled() {
                return false;
            }
            if !live.borrow_and_update().paused {
                return true;
            }
            tokio::select! {
                () = self.cancel.cancelled() => return false,
                changed = live.changed() => if changed.is_err() { return false },
            }
        }
    }

    /// Applies the policy to a call, asking a human when it says so.
    pub(super) async fn check(&self, tool: &str, call_id: &str, args: &Value) -> Gate {
        let mut policy = self.live.borrow().policy.clone();
        // A loaded skill's `allowed-tools` apply while it is loaded.
        let extra = super::read_skills(&self.spec.skills).active_allowed_tools();
        policy.permissions.allow.extend(extra);
        let request = ToolRequest {
            tool,
            args,
            workspace: &self.spec.cwd,
        };
        let verdict = {
            let grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
            gantry_policy::decide(&policy, &grants, &request)
        };
        match verdict {
            Verdict::Allow => Gate::Run,
            Verdict::Deny { reason, rules } => {
                Gate::Refuse(Refusal::PolicyDenied { reason, rules })
            }
            ask @ Verdict::Ask { .. } => self.ask(&ask, &request, call_id).await,
        }
    }

    /// Under the `on-failure` approval policy, a command that failed inside
    /// the sandbox may run again without it, if a human approves.
    pub(super) async fn ask_to_rerun_unsandboxed(
        &self,
        tool: &str,
        call_id: &str,
        args: &Value,
    ) -> Gate {
        if self.shared.config.max_sandbox < SandboxMode::DangerFullAccess {
            return Gate::Refuse(Refusal::PolicyDenied {
                reason: "this server runs no command outside the sandbox".to_owned(),
                rules: Vec::new(),
            });
        }
        let policy = self.live.borrow().policy.clone();
        if !gantry_policy::asks_on_failure(&policy) {
            return Gate::Refuse(Refusal::PolicyDenied {
                reason: "the approval policy does not rerun failed commands".to_owned(),
                rules: Vec::new(),
            });
        }
        let request = ToolRequest {
            tool,
            args,
            workspace: &self.spec.cwd,
        };
        let ask = Verdict::Ask {
            reason: "the command failed inside the sandbox; run it again without the sandbox?"
                .to_owned(),
            rules: Vec::new(),
            timeout_ms: policy.confirmation.default_timeout_ms,
            on_timeout: policy.confirmation.timeout_action,
        };
        self.ask(&ask, &request, call_id).await
    }

    /// Puts an approval item in front of clients and waits for the answer.
    async fn ask(&self, verdict: &Verdict, request: &ToolRequest<'_>, call_id: &str) -> Gate {
        let Some(ask) = gantry_policy::approval_request(call_id, request, verdict) else {
            return Gate::Run;
        };
        if self.spec.unattended {
            // Nobody is there to answer: waiting would only stall a
            // scheduled job until the approval's timeout.
            return Gate::Refuse(Refusal::PolicyDenied {
                reason: format!(
                    "it needs an approval ({}), and this turn is unattended (a scheduled \
                     job's): nobody can give one, so it was not run",
                    ask.reason
                ),
                rules: ask.matched_rules,
            });
        }
        let waiting = Waiting::Approval {
            timeout_ms: ask.timeout_ms,
            on_timeout: ask.on_timeout,
        };
        let timeout_ms = ask.timeout_ms;
        let approval_id = new_id();
        // Held before it is announced: a client answering the event at once
        // must find it pending.
        let answer = self.hold(&approval_id, waiting).await;
        let mut item = self
            .em
            .start_item(
                self.rounds,
                ItemKind::Approval {
                    approval_id: approval_id.clone(),
                    request: ask,
                    decision: None,
                    resolved_by: None,
                },
            )
            .await;
        let Some(Resolution::Approval { decision, by }) =
            self.wait(&approval_id, answer, timeout_ms).await
        else {
            self.em.complete_item(item, ItemStatus::Interrupted).await;
            return Gate::Stop;
        };
        if let ItemKind::Approval {
            decision: d,
            resolved_by,
            ..
        } = &mut item.kind
        {
            *d = Some(decision.clone());
            *resolved_by = Some(by);
        }
        self.em.complete_item(item, ItemStatus::Completed).await;
        let outcome = {
            let mut grants = self.grants.lock().unwrap_or_else(|p| p.into_inner());
            gantry_policy::resolve(&mut grants, request, &decision)
        };
        match outcome {
            gantry_policy::Resolution::Run => Gate::Run,
            gantry_policy::Resolution::Refuse { reason } => {
                Gate::Refuse(Refusal::ApprovalDenied { reason })
            }
            gantry_policy::Resolution::Abort => {
                // An abort ends the turn like an interrupt.
                self.cancel.cancel();
                Gate::Stop
            }
        }
    }

    /// Hands a call to a client and waits for its result (an external lane).
    pub(super) async fn external(
        &self,
        handler: LaneHandler,
        tool: &str,
        args: &Value,
        mut item: Item,
    ) -> (Item, ItemStatus, String) {
        let task_id = new_id();
        item.kind = ItemKind::ExternalTask {
            task_id: task_id.clone(),
            lane: handler.lane,
            tool: tool.to_owned(),
            mode: HandlerMode::External,
            payload: args.clone(),
            timeout_ms: handler.timeout_ms,
            result: None,
            error: None,
        };
        let info = ExternalTaskInfo {
            task_id: task_id.clone(),
            lane: handler.lane,
            tool: tool.to_owned(),
            payload: args.clone(),
            timeout_ms: handler.timeout_ms,
            remaining_ms: handler.timeout_ms,
            started: Some(Instant::now()),
        };
        // Held before it is announced, like an approval.
        let answer = self.hold(&task_id, Waiting::Task(info)).await;
        self.em.announce(&item).await;
        let outcome = match self.wait(&task_id, answer, handler.timeout_ms).await {
            Some(Resolution::Task(result)) => result,
            _ => Err("interrupted".to_owned()),
        };
        let (status, output) = match &outcome {
            Ok(result) => (ItemStatus::Completed, result.clone()),
            Err(e) if self.cancel.is_cancelled() => {
                (ItemStatus::Interrupted, format!("error: {e}"))
            }
            Err(e) => (ItemStatus::Failed, format!("error: {e}")),
        };
        if let ItemKind::ExternalTask { result, error, .. } = &mut item.kind {
            match outcome {
                Ok(r) => *result = Some(r),
                Err(e) => *error = Some(e),
            }
        }
        (item, status, output)
    }

    /// Registers a pending request with the actor; the receiver gets its
    /// resolution.
    pub(super) async fn hold(&self, id: &str, waiting: Waiting) -> oneshot::Receiver<Resolution> {
        let (tx, rx) = oneshot::channel();
        self.em
            .send(TurnMsg::Await {
                id: id.to_owned(),
                waiting,
                reply: tx,
            })
            .await;
        rx
    }

    /// Waits for a held request's resolution; after `timeout_ms` asks the
    /// actor to resolve it by policy. `None` if the actor is gone.
    pub(super) async fn wait(
        &self,
        id: &str,
        mut rx: oneshot::Receiver<Resolution>,
        timeout_ms: u64,
    ) -> Option<Resolution> {
        tokio::select! {
            resolution = &mut rx => return resolution.ok(),
            () = self.cancel.cancelled() => return None,
            () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => {}
        }
        // Time is up: the actor resolves it, unless an answer got there first.
        self.em.send(TurnMsg::Expire { id: id.to_owned() }).await;
        tokio::select! {
            resolution = rx => resolution.ok(),
            () = self.cancel.cancelled() => None,
        }
    }
}
