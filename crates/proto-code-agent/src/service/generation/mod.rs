//! Generation: a turn of the session's agent on the client's message, whole
//! (`Generate`) or as it happens (`StreamGenerate`), and output valid
//! against a JSON Schema (`GenerateStructured`, `StreamGenerateStructured`).

mod agentic;
mod chunks;
mod input;
mod structured;
mod turn;

pub(crate) use agentic::{agentic_generate, delegate, stream_agentic_generate, stream_delegate};
pub(crate) use structured::{generate_structured, stream_generate_structured};
pub(crate) use turn::{generate, stream_generate};
