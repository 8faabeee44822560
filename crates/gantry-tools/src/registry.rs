//! The set of tools a thread offers its model.

use std::collections::BTreeMap;
use std::sync::Arc;

use gantry_types::ToolSpec;

use crate::Tool;

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools: `shell`, `read_file`, `write_file`, `edit_file`,
    /// `list_dir`, `glob`, `grep`.
    pub fn builtin() -> Self {
        let mut r = Self::new();
        r.register(Arc::new(crate::ShellTool));
        r.register(Arc::new(crate::ReadFileTool));
        r.register(Arc::new(crate::WriteFileTool));
        r.register(Arc::new(crate::EditFileTool));
        r.register(Arc::new(crate::ListDirTool));
        r.register(Arc::new(crate::GlobTool));
        r.register(Arc::new(crate::GrepTool));
        r.register(Arc::new(crate::TodoWriteTool));
        r
    }

    /// Adds (or replaces) a tool under its spec's name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// Keeps only the tools whose name `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|name, _| keep(name));
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Specs of every tool, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}
