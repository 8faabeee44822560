//! A `request_user_input` call: the questions checked, held with the
//! thread's actor, put in front of clients as a `user_input` item, and
//! waited on until a client answers, the time runs out or the turn is
//! interrupted (the first of them wins). The model hears the answers, or
//! that nobody answered, and the turn goes on.

use gantry_types::{Item, ItemKind, ItemStatus, ResolvedBy, new_id};
use serde_json::Value;

use super::Loop;
use crate::actor::{Resolution, Waiting};
use crate::user_input::{NOBODY_TO_ASK, offered, outcome_for_model, parse_questions};

/// Told to the model when an interrupt cut the wait short.
const CANCELLED: &str = "error: the questions were cancelled: the turn was interrupted";

impl Loop<'_> {
    /// Asks the user the call's questions and returns what the model is told.
    pub(super) async fn ask_user(&self, call_id: &str, args: &Value, mut item: Item) -> String {
        // The thread may have become unattended since the turn started.
        let policy = self.live.borrow().policy.clone();
        if !offered(&policy, self.spec.unattended) {
            self.em.announce(&item).await;
            return self.refuse(item, NOBODY_TO_ASK).await;
        }
        let questions = match parse_questions(args) {
            Ok(questions) => questions,
            Err(problems) => {
                self.em.announce(&item).await;
                return self.refuse(item, &problems).await;
            }
        };
        let timeout_ms = policy.user_input.timeout_ms;
        let request_id = new_id();
        // Held before it is announced: a client answering the item at once
        // must find it pending.
        let waiting = Waiting::UserInput {
            questions: questions.clone(),
        };
        let answer = self.hold(&request_id, waiting).await;
        item.kind = ItemKind::UserInput {
            request_id: request_id.clone(),
            call_id: call_id.to_owned(),
            questions: questions.clone(),
            timeout_ms,
            answers: None,
            resolved_by: None,
        };
        self.em.announce(&item).await;
        // 0 waits as long as it takes (tokio clamps the far future).
        let limit = if timeout_ms == 0 {
            u64::MAX
        } else {
            timeout_ms
        };
        let resolution = self.wait(&request_id, answer, limit).await;
        let (answers, by) = match resolution {
            Some(Resolution::UserInput { answers, by }) if by != ResolvedBy::Interrupt => {
                (answers, by)
            }
            // Interrupted (or the actor is gone): the turn ends.
            _ => {
                set_resolution(&mut item, None, ResolvedBy::Interrupt);
                set_output(&mut item, CANCELLED);
                self.em.complete_item(item, ItemStatus::Interrupted).await;
                return CANCELLED.to_owned();
            }
        };
        let output = outcome_for_model(&questions, answers.as_deref(), timeout_ms);
        set_resolution(&mut item, answers, by);
        set_output(&mut item, &output);
        self.em.complete_item(item, ItemStatus::Completed).await;
        output
    }
}

fn set_resolution(
    item: &mut Item,
    given: Option<Vec<gantry_types::UserInputAnswer>>,
    by: ResolvedBy,
) {
    if let ItemKind::UserInput {
        answers,
        resolved_by,
        ..
    } = &mut item.kind
    {
        *answers = given;
        *resolved_by = Some(by);
    }
}

fn set_output(item: &mut Item, output: &str) {
    if let Some(origin) = &mut item.tool_call {
        origin.output = Some(output.to_owned());
    }
}
