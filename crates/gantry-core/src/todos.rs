//! The thread's task list through the engine API (the model keeps it with
//! the `todo_write` tool; clients read and replace it here).

use gantry_types::{ThreadId, TodoItem};

use crate::actor::Command;
use crate::{EngineError, Threads};

impl Threads<'_> {
    /// The thread's task list.
    pub async fn todos(self, thread: &ThreadId) -> Result<Vec<TodoItem>, EngineError> {
        Ok(self
            .engine
            .threads()
            .read(thread)
            .await?
            .thread
            .todos
            .clone())
    }

    /// Replaces the thread's task list (persisted; a `todos_set` event).
    pub async fn set_todos(
        &self,
        thread: &ThreadId,
        todos: Vec<TodoItem>,
    ) -> Result<(), EngineError> {
        self.engine
            .ask(thread, |reply| Command::SetTodos { todos, reply })
            .await?
    }
}
