//! The file tools' reads and writes as `fs/read_text_file` and
//! `fs/write_text_file`.

use std::path::Path;

use async_trait::async_trait;
use gantry_core::FileAccess;
use serde_json::Value;

use crate::rpc::Peer;
use crate::wire::{ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest};

/// One session's files, through its client.
pub(crate) struct ClientFiles {
    peer: Peer,
    session_id: String,
}

impl ClientFiles {
    pub(crate) fn new(peer: Peer, session_id: String) -> Self {
        Self { peer, session_id }
    }
}

#[async_trait]
impl FileAccess for ClientFiles {
    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let params = ReadTextFileRequest {
            session_id: self.session_id.clone(),
            path: path.to_string_lossy().into_owned(),
        };
        self.peer
            .request::<ReadTextFileResponse>("fs/read_text_file", params)
            .await
            .map(|r| r.content)
            .map_err(|e| format!("the editor answered: {}", e.message))
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        let params = WriteTextFileRequest {
            session_id: self.session_id.clone(),
            path: path.to_string_lossy().into_owned(),
            content: content.to_owned(),
        };
        self.peer
            .request::<Value>("fs/write_text_file", params)
            .await
            .map(|_| ())
            .map_err(|e| format!("the editor answered: {}", e.message))
    }
}
