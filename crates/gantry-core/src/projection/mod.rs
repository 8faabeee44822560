//! What protocols need to know, derived from a thread's view: the
//! conversation as messages, each tool call with its result and outcome,
//! what each file change did, the approvals asked and how they were
//! answered, the questions the model put to the user. (Usage is a field already: `Thread::usage`, `Turn::usage`.)
//! Every adapter projects through here instead of reading items (or their
//! text) its own way, so two protocols never disagree on what happened.

mod approvals;
mod conversation;
mod file_changes;
mod tool_calls;
mod user_inputs;

pub use approvals::{Answer, Approval, approvals};
pub use conversation::{Message, Part, Role, conversation};
pub use file_changes::{DiffStat, FileChangeKind, diff_stat};
pub use tool_calls::{ToolOutcome, tool_outcome};
pub use user_inputs::{UserInputRequest, UserInputState, pending_user_inputs, user_inputs};
