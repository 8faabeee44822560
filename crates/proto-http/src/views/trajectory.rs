//! The ATIF trajectory as the API document describes it: gantry-atif's
//! wire type, its parts as JSON objects (the schema is ATIF's, kept by
//! Harbor: `harbor.models.trajectories.Trajectory`).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// An ATIF-v1.8 trajectory (Harbor's Agent Trajectory Interchange Format).
#[derive(Debug, Serialize, ToSchema)]
pub struct TrajectoryView {
    /// `ATIF-v1.8`.
    pub schema_version: String,
    /// The thread id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `{name: "gantry", version, model_name, tool_definitions}`.
    #[schema(value_type = Object)]
    pub agent: Value,
    /// The steps, `step_id` from 1: `source` user, agent (one per model
    /// round: `message`, `reasoning_content`, `tool_calls`, `observation`,
    /// `metrics`) or system (errors, compactions).
    #[schema(value_type = Vec<Object>)]
    pub steps: Vec<Value>,
    /// How the trajectory was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Totals: tokens, cost, steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub final_metrics: Option<Value>,
    /// Gantry's details: workspace, thread status, turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<Value>,
}

impl TryFrom<gantry_atif::Trajectory> for TrajectoryView {
    type Error = serde_json::Error;

    fn try_from(t: gantry_atif::Trajectory) -> Result<Self, Self::Error> {
        Ok(TrajectoryView {
            schema_version: t.schema_version,
            session_id: t.session_id,
            agent: serde_json::to_value(&t.agent)?,
            steps: t
                .steps
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?,
            notes: t.notes,
            final_metrics: t.final_metrics.map(serde_json::to_value).transpose()?,
            extra: t.extra.map(Value::Object),
        })
    }
}
