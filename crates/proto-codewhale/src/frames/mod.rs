//! A thread's engine notifications as CodeWhale frames: `mapper.rs` maps
//! them, `feed.rs` follows a thread from a client's resume point;
//! `mcp.rs` maps the engine-wide events CodeWhale has frames for.

mod feed;
mod mapper;
mod mcp;

pub use feed::{FrameFeed, ResumePoint};
pub use mapper::{FrameMapper, Framed};
pub use mcp::{engine_frame, mcp_summary};
