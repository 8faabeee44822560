//! What every Gantry gRPC server wears: a request guard (the content type
//! must be gRPC with protobuf; a unary call carries exactly one message),
//! a codec that answers malformed protobuf with `INVALID_ARGUMENT`, an
//! accept loop that sets `TCP_NODELAY`, and [`clip`], the cap on client
//! input echoed in a status message.

mod clip;
mod codec;
mod guard;
mod incoming;

pub use clip::{CLIP_CHARS, MESSAGE_CHARS, bounded, clip};
pub use codec::{ProtoCodec, ProtoDecoder};
pub use guard::{Guard, GuardLayer};
pub use incoming::incoming;
