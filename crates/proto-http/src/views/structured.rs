//! `POST /v1/threads/{id}/structured`: a turn whose answer is JSON valid
//! against a schema.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::UsageView;

/// `POST /v1/threads/{id}/structured`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StructuredAsk {
    /// What the model is asked (the turn's user message).
    pub prompt: String,
    /// The JSON Schema the answer must satisfy.
    #[schema(value_type = Object)]
    pub schema: Value,
    /// A name for the schema, shown on the `structured_output` item.
    #[serde(default)]
    pub schema_name: Option<String>,
    /// Instructions for this answer, added to the thread's.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Invalid answers the model is told about and asked again for before
    /// the turn fails [default: 3].
    #[serde(default)]
    pub retries: Option<u32>,
}

/// A structured turn's accepted answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct StructuredAnswer {
    /// The turn that produced it.
    pub turn_id: String,
    /// The answer, valid against the schema.
    #[schema(value_type = Object)]
    pub output: Value,
    /// Tokens the turn used.
    pub usage: UsageView,
}
