//! proto-acp's integration tests: a real engine, the scripted model over
//! real HTTP, the agent on an in-memory duplex pipe.

mod common;
mod delegate;
mod elicit;
mod session;
