//! The W3C `traceparent` a turn-starting rpc may carry as gRPC metadata
//! (the key OpenTelemetry's gRPC propagation writes), kept with the turn it
//! starts so the turn's trace continues the caller's.

/// The request's `traceparent` metadata, when well-formed
/// (`gantry_types::trace_context`); anything else is ignored, never an error.
pub(crate) fn traceparent<T>(request: &tonic::Request<T>) -> Option<String> {
    let value = request.metadata().get("traceparent")?.to_str().ok()?;
    gantry_types::trace_context::parse(value)
}
