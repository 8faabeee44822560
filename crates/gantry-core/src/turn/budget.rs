//! The thread goal's token budget: a turn stops before a model request that
//! would pass it.

use gantry_types::ToolSpec;

use super::Loop;

impl Loop<'_> {
    /// Why the next request may not start, when the thread goal has a token
    /// budget the goal's usage so far plus this turn's plus the next request
    /// would pass. Only a pursued goal (active or already budget-limited)
    /// holds turns to its budget.
    pub(super) fn over_budget(&self, tools: &[ToolSpec]) -> Option<String> {
        let (budget, before) = {
            let live = self.live.borrow();
            let goal = live.goal.as_ref().filter(|g| g.status.is_pursued())?;
            (goal.token_budget?, goal.tokens_used)
        };
        let used = before.saturating_add(self.usage.total());
        // The next request's input is what it will at least cost; its output
        // is unknown, so it is not counted.
        let next = self.context_used(tools);
        if used.saturating_add(next) <= budget {
            return None;
        }
        Some(format!(
            "token budget reached: the thread goal allows {budget} tokens, {used} are used and the next request needs about {next} more; set the goal again with a larger budget to continue"
        ))
    }
}
