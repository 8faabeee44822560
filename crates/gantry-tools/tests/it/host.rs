//! A host serving the tools' I/O: the file tools read and write its text
//! (never the disk), still only inside the workspace; `shell` runs through
//! its runner, with the item and model output of a local run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use gantry_tools::host::{CommandExit, CommandRunner, FileAccess, HostCommand};
use gantry_tools::{EditFileTool, ReadFileTool, ShellTool, Tool, ToolStatus, WriteFileTool};
use gantry_types::ItemKind;
use serde_json::json;

use crate::common::ctx;

#[derive(Default)]
struct Buffers(Mutex<BTreeMap<PathBuf, String>>);

#[async_trait]
impl FileAccess for Buffers {
    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let files = self.0.lock().unwrap();
        files
            .get(path)
            .cloned()
            .ok_or_else(|| "no such buffer".to_owned())
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        self.0
            .lock()
            .unwrap()
            .insert(path.to_owned(), content.to_owned());
        Ok(())
    }
}

#[tokio::test]
async fn file_tools_use_the_hosts_text_and_stay_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    let buffers = Arc::new(Buffers::default());
    let file = c.workspace.join("a.txt");
    std::fs::write(&file, "on disk\n").unwrap();
    buffers
        .0
        .lock()
        .unwrap()
        .insert(file.clone(), "in the buffer\n".into());
    c.host.files = Some(buffers.clone());

    let read = ReadFileTool.run(json!({"path": "a.txt"}), c.clone()).await;
    assert_eq!(read.model_output, "     1\tin the buffer\n");
    let edit = EditFileTool
        .run(
            json!({"path": "a.txt", "old_string": "buffer", "new_string": "editor"}),
            c.clone(),
        )
        .await;
    assert_eq!(edit.status, ToolStatus::Ok, "{}", edit.model_output);
    let written = WriteFileTool
        .run(json!({"path": "b.txt", "content": "new\n"}), c.clone())
        .await;
    let ItemKind::FileChange { diff, .. } = &written.item else {
        panic!("a file change: {:?}", written.item);
    };
    assert!(diff.starts_with("--- /dev/null"), "a new file: {diff}");
    let buffers_now = buffers.0.lock().unwrap().clone();
    assert_eq!(buffers_now[&file], "in the editor\n");
    assert_eq!(buffers_now[&c.workspace.join("b.txt")], "new\n");
    // The disk was never touched.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "on disk\n");
    assert!(!c.workspace.join("b.txt").exists());
    let outside = ReadFileTool.run(json!({"path": "/etc/passwd"}), c).await;
    assert_eq!(outside.status, ToolStatus::Error);
}

#[derive(Default)]
struct Runner(
    Mutex<Vec<(String, PathBuf, Option<String>)>>,
    Mutex<Vec<(String, String)>>,
);

#[async_trait]
impl CommandRunner for Runner {
    async fn run(&self, command: HostCommand<'_>) -> Result<CommandExit, String> {
        *self.1.lock().unwrap() = command.env.clone();
        self.0.lock().unwrap().push((
            command.command.to_owned(),
            command.cwd.to_owned(),
            command.call_id.map(str::to_owned),
        ));
        Ok(CommandExit {
            output: "from the host\n".into(),
            exit_code: Some(2),
            ..CommandExit::default()
        })
    }
}

#[tokio::test]
async fn shell_runs_through_the_hosts_runner() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    let runner = Arc::new(Runner::default());
    c.host.commands = Some(runner.clone());
    c.call_id = Some("call_7".into());
    let out = ShellTool
        .run(json!({"command": "touch never.txt"}), c.clone())
        .await;
    assert!(
        out.model_output.starts_with("Exit code: 2\n"),
        "{}",
        out.model_output
    );
    let ItemKind::CommandExecution {
        output, exit_code, ..
    } = &out.item
    else {
        panic!("a command: {:?}", out.item);
    };
    assert_eq!((output.as_str(), *exit_code), ("from the host\n", Some(2)));
    let ran = runner.0.lock().unwrap().clone();
    assert_eq!(
        ran,
        [(
            "touch never.txt".to_owned(),
            c.workspace.clone(),
            Some("call_7".to_owned())
        )]
    );
    assert!(
        !c.workspace.join("never.txt").exists(),
        "nothing ran locally"
    );
}

#[tokio::test]
async fn a_host_is_given_no_secret_and_no_minted_credential() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    let runner = Arc::new(Runner::default());
    c.host.commands = Some(runner.clone());
    c.env = Arc::new(BTreeMap::from([
        ("PROJECT_MODE".to_owned(), "dev".to_owned()),
        ("OPENAI_API_KEY".to_owned(), "sk-secret".to_owned()),
        ("DEPLOY_TOKEN".to_owned(), "t-secret".to_owned()),
        ("DB_PASSWORD".to_owned(), "p-secret".to_owned()),
    ]));
    c.minted_env = vec![("GH_TOKEN".to_owned(), "ghs_minted".to_owned())];
    ShellTool.run(json!({"command": "env"}), c).await;
    let env = runner.1.lock().unwrap().clone();
    assert_eq!(env, [("PROJECT_MODE".to_owned(), "dev".to_owned())]);
}
