//! Engine-wide events as frames: MCP servers' startup progress and its
//! summary, which belong to no thread (stdio sends them as thread-less
//! notifications, HTTP over `GET /events`).

use gantry_core::EngineEventKind;

use crate::wire::{
    EventFrame, McpStartupCompleteEvent, McpStartupFailure, McpStartupStatus, McpStartupUpdateEvent,
};

/// The frame of an engine-wide event, if CodeWhale has one for it.
pub fn engine_frame(kind: EngineEventKind) -> Option<EventFrame> {
    Some(match kind {
        EngineEventKind::McpStartupUpdate(update) => EventFrame::McpStartupUpdate {
            update: McpStartupUpdateEvent {
                server_name: update.server_name,
                status: mcp_status(update.status),
            },
        },
        EngineEventKind::McpStartupComplete(summary) => EventFrame::McpStartupComplete {
            summary: mcp_summary(summary),
        },
        _ => return None,
    })
}

/// The summary of an MCP startup as CodeWhale sends it.
pub fn mcp_summary(summary: gantry_types::mcp::McpStartupComplete) -> McpStartupCompleteEvent {
    McpStartupCompleteEvent {
        ready: summary.ready,
        failed: summary
            .failed
            .into_iter()
            .map(|f| McpStartupFailure {
                server_name: f.server_name,
                error: f.error,
            })
            .collect(),
        cancelled: summary.cancelled,
    }
}

fn mcp_status(status: gantry_types::mcp::McpStartupStatus) -> McpStartupStatus {
    use gantry_types::mcp::McpStartupStatus as S;
    match status {
        S::Starting => McpStartupStatus::Starting,
        S::Ready => McpStartupStatus::Ready,
        S::Failed { error } => McpStartupStatus::Failed { error },
        S::Cancelled => McpStartupStatus::Cancelled,
    }
}
