//! Running the tool calls of one answer, in parallel, each as an item. Each
//! call passes the gate first (pause, policy, approval), then runs where its
//! lane says: in the engine, at a client (external), or both (hybrid).

use std::sync::Arc;

use futures_util::future::join_all;
use gantry_llm::{Message, ToolCall};
use gantry_tools::sandbox::SandboxPolicy;
use gantry_tools::{Tool, ToolContext, ToolStatus};
use gantry_types::{DeltaKind, HandlerMode, Item, ItemKind, ItemStatus, Refusal, ToolCallOrigin};
use serde_json::Value;

use super::Loop;
use super::gate::Gate;

/// A call checked, ready for the gate.
enum Prepared {
    Run {
        tool: Arc<dyn Tool>,
        name: String,
        call_id: String,
        args: Value,
        /// Not announced yet: an approval, if any, comes first.
        item: Item,
    },
    /// Not runnable (unknown tool, invalid JSON): answered with this error.
    Refuse { item: Item, error: String },
}

impl Loop<'_> {
    /// Runs every call concurrently and returns their results in call order;
    /// every call gets an answer, even when refused or interrupted.
    // Calls start in the model's order, so a rebuilt history matches what the
    // model saw; lane priority needs no reordering here since all run at once.
    pub(super) async fn run_tools(&mut self, calls: &[ToolCall]) -> Vec<Message> {
        let round = self.rounds;
        let mut prepared = Vec::with_capacity(calls.len());
        for call in calls {
            let p = self.prepare(round, call);
            // A call that cannot run is shown at once, in call order.
            if let Prepared::Refuse { item, .. } = &p {
                self.em.announce(item).await;
            }
            prepared.push(p);
        }
        let outputs = join_all(prepared.into_iter().map(|p| self.run_one(p))).await;
        calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| Message::ToolResult {
                call_id: call.id.clone(),
                output,
            })
            .collect()
    }

    /// Checks a call; a `Refuse` is for the caller to announce.
    fn prepare(&self, round: u32, call: &ToolCall) -> Prepared {
        let origin = ToolCallOrigin {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            output: None,
            refused: None,
            internal: false,
        };
        let parsed: Result<Value, _> = if call.arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments)
        };
        let new_item = |kind: ItemKind| {
            let mut item = self.em.new_item(round, kind);
            item.tool_call = Some(origin.clone());
            item
        };
        let refuse = |arguments: Value, error: String| {
            let item = new_item(ItemKind::ToolCall {
                name: call.name.clone(),
                arguments,
                result: None,
                error: None,
            });
            Prepared::Refuse { item, error }
        };
        let Some(tool) = self.tools.get(&call.name).cloned() else {
            let known: Vec<&str> = self.tools.names().collect();
            let arguments = parsed.unwrap_or_else(|_| Value::String(call.arguments.clone()));
            return refuse(
                arguments,
                format!(
                    "unknown tool {:?}; available tools: {}",
                    call.name,
                    known.join(", ")
                ),
            );
        };
        let args = match parsed {
            Ok(args) if args.is_object() => args,
            Ok(_) => {
                return refuse(
                    Value::String(call.arguments.clone()),
                    "arguments must be a JSON object; call the tool again with an object"
                        .to_owned(),
                );
            }
            Err(e) => {
                return refuse(
                    Value::String(call.arguments.clone()),
                    format!(
                        "arguments are not valid JSON ({e}); call the tool again with a valid JSON object"
                    ),
                );
            }
        };
        let item = new_item(tool.start_item(&args, &self.tool_context(None)));
        Prepared::Run {
            tool,
            name: call.name.clone(),
            call_id: call.id.clone(),
            args,
            item,
        }
    }

    fn tool_context(&self, item: Option<&Item>) -> ToolContext {
        let mut ctx = ToolContext::new(self.spec.cwd.clone());
        ctx.cancel = self.cancel.child_token();
        ctx.limits = self.shared.config.tool_limits;
        ctx.env = self.shared.command_env();
        ctx.shell_snapshots = self.shared.shell_snapshots.clone();
        let mode = self.live.borrow().policy.sandbox;
        ctx.sandbox =
            self.shared
                .sandbox_policy(mode, &self.spec.cwd, self.spec.thread_id.as_str());
        if let Some(source) = &self.shared.tool_host_source {
            ctx.host = source.host_for(&self.spec.thread_id);
        }
        if let Some(item) = item {
            ctx.call_id = item.tool_call.as_ref().map(|o| o.call_id.clone());
            // The tool waits for each chunk to be taken: a command's output
            // is back-pressured like a model's tokens, never buffered here.
            let to = Arc::new((self.em.clone(), item.id.clone()));
            ctx.output = Arc::new(move |chunk: String| {
                let to = to.clone();
                Box::pin(async move { to.0.delta(&to.1, DeltaKind::CommandOutput(chunk)).await })
            });
            if matches!(item.kind, ItemKind::CommandExecution { .. }) {
                ctx.process_started = self.process_started(item);
            }
        }
        ctx
    }

    /// Records a command's process id as its item's update, as soon as the
    /// process started (clients show the pid of a command still running).
    fn process_started(&self, item: &Item) -> gantry_tools::ProcessSink {
        let to = Arc::new((self.em.clone(), item.clone()));
        Arc::new(move |pid: u32| {
            let to = to.clone();
            Box::pin(async move {
                let (em, item) = &*to;
                let mut item = item.clone();
                if let ItemKind::CommandExecution { process_id, .. } = &mut item.kind {
                    *process_id = Some(pid);
                }
                em.update_item(item).await;
            })
        })
    }

    async fn run_one(&self, prepared: Prepared) -> String {
        let (tool, name, call_id, args, item) = match prepared {
            Prepared::Refuse { item, error } => return self.refuse(item, &error).await,
            Prepared::Run {
                tool,
                name,
                call_id,
                args,
                item,
            } => (tool, name, call_id, args, item),
        };
        if !self.wait_unpaused().await {
            self.em.announce(&item).await;
            return self
                .refuse_as(item, "interrupted before it ran", ItemStatus::Interrupted)
                .await;
        }
        // Asking the user is itself a question to a human: no policy gate
        // or lane stands before it.
        if name == crate::user_input::REQUEST_USER_INPUT {
            return self.ask_user(&call_id, &args, item).await;
        }
        match self.check(&name, &call_id, &args).await {
            Gate::Run => {}
            Gate::Refuse(refusal) => {
                self.em.announce(&item).await;
                return self.refused(item, refusal).await;
            }
            Gate::Stop => {
                self.em.announce(&item).await;
                return self
                    .refuse_as(item, "interrupted before it ran", ItemStatus::Interrupted)
                    .await;
            }
        }
        let handler = self.live.borrow().handler(gantry_policy::lane_of(&name));
        match handler {
            Some(h) if h.mode == HandlerMode::External => {
                let (mut item, status, output) = self.external(h, &name, &args, item).await;
                set_output(&mut item, &output);
                self.em.complete_item(item, status).await;
                output
            }
            Some(h) => {
                // Hybrid: clients see the call as a task; the engine runs it.
                let note = self
                    .em
                    .start_item(
                        self.rounds,
                        ItemKind::ExternalTask {
                            task_id: gantry_types::new_id(),
                            lane: h.lane,
                            tool: name.clone(),
                            mode: HandlerMode::Hybrid,
                            payload: args.clone(),
                            timeout_ms: h.timeout_ms,
                            result: None,
                            error: None,
                        },
                    )
                    .await;
                let (output, status, _) = self.run_internal(tool, args, item, false).await;
                let mut note = note;
                if let ItemKind::ExternalTask { result, .. } = &mut note.kind {
                    *result = Some(output.clone());
                }
                self.em.complete_item(note, status).await;
                output
            }
            None => {
                let origin = item.tool_call.clone();
                let (output, _, failed) = self
                    .run_internal(tool.clone(), args.clone(), item, false)
                    .await;
                if !failed {
                    return output;
                }
                // Under `on-failure`, a command that failed in the sandbox
                // may run again without it, once a human approves.
                match self.ask_to_rerun_unsandboxed(&name, &call_id, &args).await {
                    Gate::Run => {
                        let mut again = self.em.new_item(
                            self.rounds,
                            tool.start_item(&args, &self.tool_context(None)),
                        );
                        again.tool_call = origin;
                        self.run_internal(tool, args, again, true).await.0
                    }
                    _ => output,
                }
            }
        }
    }

    /// Runs a call in the engine. Returns what the model is told, the item's
    /// status, and whether it was a command that failed inside the sandbox.
    async fn run_internal(
        &self,
        tool: Arc<dyn Tool>,
        args: Value,
        mut item: Item,
        unsandboxed: bool,
    ) -> (String, ItemStatus, bool) {
        self.em.announce(&item).await;
        let mut ctx = self.tool_context(Some(&item));
        if let (Some(source), ItemKind::CommandExecution { command, .. }) =
            (&self.shared.command_env_source, &item.kind)
        {
            ctx.minted_env = source.env_for(&self.spec.thread_id, command).await;
        }
        if unsandboxed {
            ctx.sandbox = SandboxPolicy::danger_full_access();
        }
        let sandboxed = ctx.sandbox.is_sandboxed();
        // Write ahead: before a tool acts on the world, the log holds
        // everything up to its start, so a crash cannot hide what it did.
        // A tool that only reads has nothing to hide and need not wait.
        if tool.has_side_effects() {
            self.checkpoint_before_write().await;
        }
        if tool.has_side_effects()
            && let Err(e) = self.em.durable().await
        {
            let _ = self.store_failure.set(e.0.clone());
            let refusal = Refusal::StoreUnavailable { reason: e.0 };
            return (self.refused(item, refusal).await, ItemStatus::Failed, false);
        }
        let out = tool.run(args, ctx).await;
        let failed_in_sandbox = sandboxed
            && matches!(out.item, ItemKind::CommandExecution { exit_code: Some(code), .. } if code != 0);
        item.kind = out.item;
        set_output(&mut item, &out.model_output);
        let status = match out.status {
            ToolStatus::Ok => ItemStatus::Completed,
            ToolStatus::Error => ItemStatus::Failed,
            ToolStatus::Interrupted => ItemStatus::Interrupted,
        };
        self.em.complete_item(item, status).await;
        (out.model_output, status, failed_in_sandbox)
    }

    /// Answers a call that did not run; the item (already announced) fails.
    pub(super) async fn refuse(&self, item: Item, error: &str) -> String {
        self.refuse_as(item, error, ItemStatus::Failed).await
    }

    /// Answers a call the engine refused, recording why as a type.
    async fn refused(&self, mut item: Item, refusal: Refusal) -> String {
        let error = match &refusal {
            Refusal::PolicyDenied { reason, .. } => format!("denied by policy: {reason}"),
            Refusal::ApprovalDenied { reason } => reason.clone(),
            Refusal::StoreUnavailable { reason } => {
                format!("not run: the event log cannot be saved: {reason}")
            }
        };
        if let Some(origin) = &mut item.tool_call {
            origin.refused = Some(refusal);
        }
        self.refuse(item, &error).await
    }

    async fn refuse_as(&self, mut item: Item, error: &str, status: ItemStatus) -> String {
        if let ItemKind::ToolCall { error: e, .. } = &mut item.kind {
            *e = Some(error.to_owned());
        }
        let output = format!("error: {error}");
        set_output(&mut item, &output);
        self.em.complete_item(item, status).await;
        output
    }
}

fn set_output(item: &mut Item, output: &str) {
    if let Some(origin) = &mut item.tool_call {
        origin.output = Some(output.to_owned());
    }
}
