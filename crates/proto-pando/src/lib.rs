//! The Pando instance protocol (seed 003, Pando's `protocol` package) over
//! the Gantry engine: a workspace served as a Pando instance, so Pando's
//! own clients can list its sessions (threads whose workspace it is), read
//! and send messages, and follow a running agent live.
//!
//! JSON-RPC 2.0 on a ZeroMQ ROUTER socket (`rpc`: envelopes and codes,
//! `service`: the nine methods and the newer sources' maintenance ones,
//! `delegation`: delegation protocol 2, `cron`: `cronjob.reload` on
//! Gantry's cron), events on a PUB socket (`topics`: engine
//! notifications to topics, `publisher`: the feed and the heartbeat,
//! `pubsock`: the socket's writer and `instance.shutdown`), discovery by
//! lock file and registry (`discovery`). `wire` holds the seed's types;
//! `instance` puts it together. Only the engine's public API, its typed
//! notifications and its projection are used.

mod cron;
mod delegation;
pub mod discovery;
mod instance;
mod messages;
mod nofollow;
mod publisher;
mod pubsock;
mod relay;
mod rpc;
mod service;
mod time;
mod topics;
pub mod wire;

pub use discovery::{DEFAULT_REGISTRY_DIR, DiscoveryError, LockInfo, RegistryEntry};
pub use instance::{HEARTBEAT, InstanceOptions, PandoInstance};
pub use relay::MAX_FRAME;
pub use topics::RESULT_LIMIT;
