//! Settings a running turn must see change while it runs: the thread's
//! policy, lane handlers, pause state and goal. The actor owns them and publishes
//! every change on a watch channel; turn tasks read the latest.

use std::sync::{Arc, Mutex};

use gantry_policy::SessionGrants;
use gantry_types::{HandlerMode, Lane, LaneHandler, Thread, ThreadGoal, ThreadPolicy};
use tokio::sync::watch;

/// The live settings of a thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct Live {
    pub policy: ThreadPolicy,
    pub lanes: Vec<LaneHandler>,
    pub paused: bool,
    /// The thread goal, whose token budget stops a turn.
    pub goal: Option<ThreadGoal>,
}

impl Live {
    /// The live part of a thread's metadata.
    pub(crate) fn of(thread: &Thread) -> Self {
        Self {
            policy: thread.policy.clone(),
            lanes: thread.lane_handlers.clone(),
            paused: thread.paused,
            goal: thread.goal.clone(),
        }
    }

    /// How `lane`'s calls are handled, and the external time limit.
    pub(crate) fn handler(&self, lane: Lane) -> Option<LaneHandler> {
        self.lanes
            .iter()
            .find(|h| h.lane == lane && h.mode != HandlerMode::Internal)
            .copied()
    }
}

/// "Approve for this session" answers, shared by a thread's turns.
pub(crate) type Grants = Arc<Mutex<SessionGrants>>;

/// The receiving side a turn task holds.
pub(crate) type LiveRx = watch::Receiver<Live>;
