//! How an update folds into the state it updates. Updates may come again
//! (a runner re-sends the turns that were active when its channel dropped),
//! so every rule is idempotent and no status goes backwards.
//!
//! The wire says only running or completed. A turn says more here: one
//! this control plane asked to interrupt is `interrupting` until it ends,
//! then `interrupted`; one whose message the runner answered with an error
//! while it ran (CompanyHelm's runner ends a turn its SDK failed that way,
//! with no completed update) is `failed`. Items still running when their
//! turn ends end with it, in its status.

use gantry_runner_protocol::messages as pb;

use crate::store::{ItemRecord, TurnRecord};

/// `running` / `completed` of a turn or item; `None` for an unknown status.
pub(crate) fn turn_status(status: pb::TurnStatus) -> Option<&'static str> {
    match status {
        pb::TurnStatus::Running => Some(RUNNING),
        pb::TurnStatus::Completed => Some(COMPLETED),
        pb::TurnStatus::Unknown => None,
    }
}

/// `running` / `completed` of an item; `None` for an unknown status.
pub(crate) fn item_status(status: pb::ItemStatus) -> Option<&'static str> {
    match status {
        pb::ItemStatus::Running => Some(RUNNING),
        pb::ItemStatus::Completed => Some(COMPLETED),
        pb::ItemStatus::Unknown => None,
    }
}

/// The stored name of an item type.
pub(crate) fn item_type(item_type: pb::ItemType) -> &'static str {
    match item_type {
        pb::ItemType::UserMessage => "user_message",
        pb::ItemType::AgentMessage => "agent_message",
        pb::ItemType::Reasoning => "reasoning",
        pb::ItemType::CommandExecution => "command_execution",
        pb::ItemType::Plan => "plan",
        pb::ItemType::FileChange => "file_change",
        pb::ItemType::McpToolCall => "mcp_tool_call",
        pb::ItemType::CollabAgentToolCall => "collab_agent_tool_call",
        pb::ItemType::WebSearch => "web_search",
        pb::ItemType::ImageView => "image_view",
        pb::ItemType::EnteredReviewMode => "entered_review_mode",
        pb::ItemType::ExitedReviewMode => "exited_review_mode",
        pb::ItemType::ContextCompaction => "context_compaction",
        pb::ItemType::Unknown => UNKNOWN,
    }
}

/// A turn or item in progress.
pub(crate) const RUNNING: &str = "running";
/// A turn or item that is done.
pub(crate) const COMPLETED: &str = "completed";
/// A running turn this control plane asked its runner to interrupt.
pub(crate) const INTERRUPTING: &str = "interrupting";
/// A turn that ended after it was asked to stop (and its items cut short).
pub(crate) const INTERRUPTED: &str = "interrupted";
/// A turn the runner said failed (and its items cut short).
pub(crate) const FAILED: &str = "failed";
/// An agent or thread that can be used.
pub(crate) const READY: &str = "ready";
/// An agent or thread that is gone.
pub(crate) const DELETED: &str = "deleted";
/// An item type the runner did not name.
const UNKNOWN: &str = "unknown";

/// Order of progress: a status may only move up.
fn rank(status: &str) -> u8 {
    match status {
        COMPLETED | INTERRUPTED | FAILED => 2,
        RUNNING | INTERRUPTING => 1,
        _ => 0,
    }
}

/// Whether a turn (or item) has ended.
pub(crate) fn ended(status: &str) -> bool {
    rank(status) == 2
}

/// The status after `incoming`: the further of the two.
fn progress<'a>(current: &'a str, incoming: &'a str) -> &'a str {
    if rank(incoming) > rank(current) {
        incoming
    } else {
        current
    }
}

/// The lifecycle status (`ready` / `deleted`) after `incoming`: deleted stays deleted.
pub(crate) fn lifecycle<'a>(current: &'a str, incoming: &'a str) -> &'a str {
    if current == DELETED {
        current
    } else {
        incoming
    }
}

/// The turn after `incoming`, or `None` when it changes nothing. A turn
/// being interrupted that ends was interrupted.
pub(crate) fn turn(current: Option<&TurnRecord>, incoming: TurnRecord) -> Option<TurnRecord> {
    let Some(current) = current else {
        return Some(incoming);
    };
    let mut status = progress(&current.status, &incoming.status);
    if current.status == INTERRUPTING && status == COMPLETED {
        status = INTERRUPTED;
    }
    if status == current.status {
        return None;
    }
    Some(TurnRecord {
        status: status.to_owned(),
        updated_at: incoming.updated_at,
        ..current.clone()
    })
}

/// The running turn `current` moved to `status` (`interrupting`, or
/// `failed`), at `at`; `None` for a turn not running (it ended already:
/// what it ended as stands).
pub(crate) fn turn_to(current: &TurnRecord, status: &str, at: i64) -> Option<TurnRecord> {
    if ended(&current.status) || current.status == status {
        return None;
    }
    Some(TurnRecord {
        status: status.to_owned(),
        updated_at: at,
        ..current.clone()
    })
}

/// An item left running when its turn ended as `status`, ended with it.
pub(crate) fn item_ended_with_turn(item: &ItemRecord, status: &str, at: i64) -> ItemRecord {
    ItemRecord {
        status: status.to_owned(),
        updated_at: at,
        ..item.clone()
    }
}

/// The item after `incoming`, or `None` when it changes nothing. A running
/// update of a completed item is a replay and is dropped whole, so a late
/// partial text never replaces the final one.
pub(crate) fn item(current: Option<&ItemRecord>, incoming: ItemRecord) -> Option<ItemRecord> {
    let Some(current) = current else {
        return Some(incoming);
    };
    if rank(&incoming.status) < rank(&current.status) {
        return None;
    }
    let merged = ItemRecord {
        thread_id: current.thread_id.clone(),
        id: current.id.clone(),
        turn_id: current.turn_id.clone().or(incoming.turn_id),
        item_type: if incoming.item_type == UNKNOWN {
            current.item_type.clone()
        } else {
            incoming.item_type
        },
        status: progress(&current.status, &incoming.status).to_owned(),
        text: incoming.text.or_else(|| current.text.clone()),
        command: incoming.command.or_else(|| current.command.clone()),
        first_seq: current.first_seq,
        created_at: current.created_at,
        updated_at: current.updated_at,
    };
    if merged == *current {
        return None;
    }
    Some(ItemRecord {
        updated_at: incoming.updated_at,
        ..merged
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item_at(status: &str, text: &str, at: i64) -> ItemRecord {
        ItemRecord {
            thread_id: "t".into(),
            id: "i".into(),
            turn_id: Some("u".into()),
            item_type: "agent_message".into(),
            status: status.into(),
            text: Some(text.into()),
            command: None,
            first_seq: 3,
            created_at: 1,
            updated_at: at,
        }
    }

    fn turn_at(status: &str, at: i64) -> TurnRecord {
        TurnRecord {
            thread_id: "t".into(),
            id: "u".into(),
            request_id: "q".into(),
            status: status.into(),
            first_seq: 2,
            created_at: 1,
            updated_at: at,
        }
    }

    #[test]
    fn a_completed_item_ignores_a_replayed_running_update() {
        let done = item_at(COMPLETED, "final", 5);
        assert_eq!(item(Some(&done), item_at(RUNNING, "partial", 9)), None);
    }

    #[test]
    fn a_repeated_update_changes_nothing() {
        let running = item_at(RUNNING, "so far", 5);
        assert_eq!(item(Some(&running), item_at(RUNNING, "so far", 9)), None);
        let turn_running = turn_at(RUNNING, 5);
        assert_eq!(turn(Some(&turn_running), turn_at(RUNNING, 9)), None);
    }

    #[test]
    fn an_update_moves_status_and_text_forward_and_keeps_identity() {
        let running = item_at(RUNNING, "so far", 5);
        let mut incoming = item_at(COMPLETED, "final", 9);
        incoming.first_seq = 0;
        incoming.created_at = 9;
        let merged = item(Some(&running), incoming).unwrap();
        assert_eq!(merged.status, COMPLETED);
        assert_eq!(merged.text.as_deref(), Some("final"));
        assert_eq!(
            (merged.first_seq, merged.created_at, merged.updated_at),
            (3, 1, 9)
        );
    }

    #[test]
    fn a_completed_turn_stays_completed() {
        let done = turn_at(COMPLETED, 5);
        assert_eq!(turn(Some(&done), turn_at(RUNNING, 9)), None);
        let merged = turn(Some(&turn_at(RUNNING, 5)), turn_at(COMPLETED, 9)).unwrap();
        assert_eq!((merged.status.as_str(), merged.updated_at), (COMPLETED, 9));
    }

    #[test]
    fn a_turn_asked_to_stop_that_ends_was_interrupted_and_an_ended_turn_stays_ended() {
        let running = turn_at(RUNNING, 5);
        let asked = turn_to(&running, INTERRUPTING, 6).unwrap();
        assert_eq!(asked.status, INTERRUPTING);
        // A running update again (a steer, a replay) does not undo the ask.
        assert_eq!(turn(Some(&asked), turn_at(RUNNING, 7)), None);
        let ended = turn(Some(&asked), turn_at(COMPLETED, 8)).unwrap();
        assert_eq!((ended.status.as_str(), ended.updated_at), (INTERRUPTED, 8));
        // Nothing moves an ended turn: not a late ask, a failure or a replay.
        assert_eq!(turn_to(&ended, FAILED, 9), None);
        assert_eq!(turn(Some(&ended), turn_at(COMPLETED, 9)), None);
        let done = turn_at(COMPLETED, 5);
        assert_eq!(turn_to(&done, INTERRUPTING, 9), None);
    }

    #[test]
    fn deleted_is_final() {
        assert_eq!(lifecycle(DELETED, READY), DELETED);
        assert_eq!(lifecycle(READY, DELETED), DELETED);
    }
}
