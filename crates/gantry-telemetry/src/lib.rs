//! OpenTelemetry traces of what the engine does, in the GenAI semantic
//! conventions: an `invoke_agent` span per turn, a `chat` span per model
//! request, an `execute_tool` span per tool call, exported over OTLP.
//!
//! The spans are built from the engine's typed events (the all-threads
//! feed, as `/metrics` counts them), with the start and end times those
//! events recorded: the engine knows nothing of OpenTelemetry, and a turn
//! runs no differently whether it is traced or not (`spans.rs`). Which
//! exporter, and whether any, the standard `OTEL_*` variables say
//! (`config.rs`). A turn's span gets the ids its log lines carry
//! (`ids.rs`).

mod config;
mod ids;
mod spans;

use std::sync::Arc;

use gantry_core::{Engine, Notification};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use config::{Config, ConfigError};

/// Turns the events given to it into spans ([`Tracing::recorder`]).
pub struct Recorder(spans::Spans);

impl Recorder {
    /// Takes one event of the engine's log into the spans.
    pub async fn observe(&mut self, engine: &Engine, event: &gantry_types::Event) {
        self.0.observe(engine, event).await;
    }
}

/// Traces being exported: the engine's events become spans until stopped.
pub struct Tracing {
    provider: SdkTracerProvider,
    capture_content: bool,
}

impl Tracing {
    /// What the process's `OTEL_*` variables ask for: `None` when no OTLP
    /// endpoint is set (nothing is exported, nothing is spawned).
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        Config::from_env(|name| std::env::var(name).ok())?
            .map(Self::start)
            .transpose()
    }

    /// The exporter `config` describes, with its batch processor. Over
    /// gRPC, call it inside the Tokio runtime that will run until
    /// [`Tracing::shutdown`]: the exporter's channel is a task on it.
    pub fn start(config: Config) -> Result<Self, ConfigError> {
        let provider = config.provider()?;
        Ok(Tracing {
            provider,
            capture_content: config.capture_content,
        })
    }

    /// Turns `engine`'s events into spans from now until `stop`.
    pub fn trace(&self, engine: Engine, stop: CancellationToken) -> JoinHandle<()> {
        let tracer = self.provider.tracer("gantry");
        let mut spans = spans::Spans::new(tracer, self.capture_content);
        tokio::spawn(async move {
            let mut sub = engine.clone().feeds().subscribe_all_now();
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = sub.next() => next,
                };
                match next {
                    Some(Notification::Event(event)) => spans.observe(&engine, &event).await,
                    Some(Notification::Delta(_)) => {}
                    // Fell behind: the missed events come from the store.
                    Some(Notification::Lagged { resume_from }) => {
                        match engine.clone().feeds().subscribe_all(resume_from).await {
                            Ok(again) => sub = again,
                            Err(e) => {
                                tracing::warn!(error = %e, "tracing stopped");
                                return;
                            }
                        }
                    }
                    None => return,
                }
            }
        })
    }

    /// Spans from events handed over one at a time: for a process that
    /// follows its own turn's feed (`gantry exec`), whose spans must all be
    /// built before it exports the last and exits.
    pub fn recorder(&self) -> Recorder {
        Recorder(spans::Spans::new(
            self.provider.tracer("gantry"),
            self.capture_content,
        ))
    }

    /// Sends what is still batched and stops the exporter. Blocking (the
    /// batch processor's thread answers), so off the async workers, which
    /// stay free to run the gRPC exporter's channel meanwhile.
    pub async fn shutdown(self) {
        let provider = Arc::new(self.provider);
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!(error = %e, "the last spans could not be exported");
        }
    }
}
