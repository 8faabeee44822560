//! A thread's engine notifications as CodeWhale frames: `mapper.rs` maps
//! them, `feed.rs` follows a thread from a client's resume point.

mod feed;
mod mapper;

pub use feed::{FrameFeed, ResumePoint};
pub use mapper::{FrameMapper, FramePosition, Framed};
