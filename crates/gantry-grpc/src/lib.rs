//! What every Gantry gRPC server wears: a request guard (the content type
//! must be gRPC with protobuf; a unary call carries exactly one message),
//! a codec that answers malformed protobuf with `INVALID_ARGUMENT`, an
//! accept loop that sets `TCP_NODELAY`, [`clip`], the cap on client
//! input echoed in a status message, and [`RawCodec`], message bytes
//! passed through for a side that decodes them itself.

mod clip;
mod codec;
mod guard;
mod incoming;
mod raw;

pub use clip::{CLIP_CHARS, MESSAGE_CHARS, bounded, clip};
pub use codec::{ProtoCodec, ProtoDecoder};
pub use guard::{Guard, GuardLayer};
pub use incoming::incoming;
pub use raw::RawCodec;
