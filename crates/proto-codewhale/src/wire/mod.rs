//! The CodeWhale protocol's JSON, as Gantry's own serde types with the
//! names, tags and omissions of `codewhale_protocol` 0.8.59 (golden tests
//! in `tests/it/golden.rs` round-trip them through the real crate).

mod app;
mod events;
mod thread;
pub mod v0_10;

pub use app::{
    AppRequest, AppResponse, ApprovalDecisionRequest, AskForApproval, NetworkPolicyRuleAction,
    PromptRequest, PromptResponse, ReviewDecision,
};
pub use events::{
    EventFrame, ExecApprovalRequestEvent, McpStartupCompleteEvent, McpStartupFailure,
    McpStartupStatus, McpStartupUpdateEvent, NetworkApprovalContext, NetworkPolicyAmendment,
    ResponseChannel,
};
pub use thread::{
    IfBusy, SessionSource, Thread, ThreadForkParams, ThreadGoal, ThreadGoalClearParams,
    ThreadGoalGetParams, ThreadGoalSetParams, ThreadGoalStatus, ThreadListParams, ThreadReadParams,
    ThreadRequest, ThreadResponse, ThreadResumeParams, ThreadSetNameParams, ThreadStartParams,
    ThreadStatus,
};
