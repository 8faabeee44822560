//! ACP v1's JSON as Gantry's own serde types, names and omissions as in
//! the protocol's schema (`schema/v1/schema.json` of
//! `@agentclientprotocol/sdk`, which the conformance suite validates every
//! message against). Only what Gantry reads or writes is here; `_meta`
//! (but a prompt's `_meta.traceparent`) and fields Gantry does not use are
//! ignored on the way in.
//!
//! Why not the `agent-client-protocol-schema` crate: it turns on
//! `serde_json`'s `preserve_order`, which feature unification would turn
//! on for every crate built with it (map key order changes in the store's
//! golden log and the other adapters' JSON), and it brings `indexmap`,
//! `serde_with`, `strum`, `derive_more` and `anyhow` for a few dozen
//! structs.

mod client;
mod content;
mod init;
mod session;
mod update;

pub use client::*;
pub use content::*;
pub use init::*;
pub use session::*;
pub use update::*;

/// The protocol version Gantry speaks (answered whatever the client asks).
pub const PROTOCOL_VERSION: u16 = 1;
