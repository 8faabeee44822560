//! Running the tool calls of one answer, in parallel, each as an item.

use std::sync::Arc;

use futures_util::future::join_all;
use gantry_llm::{Message, ToolCall};
use gantry_tools::{Tool, ToolContext, ToolStatus};
use gantry_types::{DeltaKind, Item, ItemKind, ItemStatus, ToolCallOrigin};
use serde_json::Value;

use super::Loop;

/// A call checked and announced, ready to run.
enum Prepared {
    Run {
        tool: Arc<dyn Tool>,
        args: Value,
        item: Item,
    },
    /// Not runnable (unknown tool, invalid JSON): answered with this error.
    Refuse { item: Item, error: String },
}

impl Loop<'_> {
    /// Runs every call and returns their results in call order; every call
    /// gets an answer, even when refused or interrupted.
    pub(super) async fn run_tools(&mut self, calls: &[ToolCall]) -> Vec<Message> {
        let round = self.rounds;
        let prepared: Vec<Prepared> = calls.iter().map(|c| self.prepare(round, c)).collect();
        let runs = prepared.into_iter().map(|p| self.run_one(p));
        let outputs = join_all(runs).await;
        calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| Message::ToolResult {
                call_id: call.id.clone(),
                output,
            })
            .collect()
    }

    fn prepare(&self, round: u32, call: &ToolCall) -> Prepared {
        let origin = ToolCallOrigin {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            output: None,
        };
        let parsed: Result<Value, _> = if call.arguments.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            serde_json::from_str(&call.arguments)
        };
        let announce = |kind: ItemKind| {
            let mut item = self.em.new_item(round, kind);
            item.tool_call = Some(origin.clone());
            self.em.announce(&item);
            item
        };
        let refuse = |arguments: Value, error: String| {
            let item = announce(ItemKind::ToolCall {
                name: call.name.clone(),
                arguments,
                result: None,
                error: None,
            });
            Prepared::Refuse { item, error }
        };
        let Some(tool) = self.shared.tools.get(&call.name).cloned() else {
            let known: Vec<&str> = self.shared.tools.names().collect();
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
        let item = announce(tool.start_item(&args, &self.tool_context(None)));
        Prepared::Run { tool, args, item }
    }

    fn tool_context(&self, item: Option<&Item>) -> ToolContext {
        let mut ctx = ToolContext::new(self.spec.cwd.clone());
        ctx.cancel = self.cancel.child_token();
        ctx.limits = self.shared.config.tool_limits;
        if let Some(item) = item {
            let em = self.em.clone();
            let id = item.id.clone();
            ctx.output = Arc::new(move |chunk: &str| {
                em.delta(&id, DeltaKind::CommandOutput(chunk.to_owned()))
            });
        }
        ctx
    }

    async fn run_one(&self, prepared: Prepared) -> String {
        match prepared {
            Prepared::Refuse { mut item, error } => {
                if let ItemKind::ToolCall { error: e, .. } = &mut item.kind {
                    *e = Some(error.clone());
                }
                let output = format!("error: {error}");
                set_output(&mut item, &output);
                self.em.complete_item(item, ItemStatus::Failed);
                output
            }
            Prepared::Run {
                tool,
                args,
                mut item,
            } => {
                let ctx = self.tool_context(Some(&item));
                let out = tool.run(args, ctx).await;
                item.kind = out.item;
                set_output(&mut item, &out.model_output);
                let status = match out.status {
                    ToolStatus::Ok => ItemStatus::Completed,
                    ToolStatus::Error => ItemStatus::Failed,
                    ToolStatus::Interrupted => ItemStatus::Interrupted,
                };
                self.em.complete_item(item, status);
                out.model_output
            }
        }
    }
}

fn set_output(item: &mut Item, output: &str) {
    if let Some(origin) = &mut item.tool_call {
        origin.output = Some(output.to_owned());
    }
}
