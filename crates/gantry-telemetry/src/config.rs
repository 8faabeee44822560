//! The standard OpenTelemetry variables Gantry honours, read once at start.

use opentelemetry_otlp::{SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// What the variables asked for, when they asked for traces at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended by the exporter).
    pub endpoint: Endpoint,
    /// `OTEL_SERVICE_NAME`, else `gantry`.
    pub service_name: String,
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: the
    /// turn's input and answer, tool arguments and results go on the spans.
    pub capture_content: bool,
}

/// Where spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A base URL: the signal's path is appended.
    Base(String),
    /// The traces URL itself.
    Traces(String),
}

/// Variables that ask for something this build cannot do.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The protocol variables, most specific first.
const PROTOCOL_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];

impl Config {
    /// Reads the variables through `var`; `None` when traces are off: no
    /// endpoint set, `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let set = |name: &str| {
            var(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return Ok(None);
        }
        let endpoint = match (
            set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            set("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(traces), _) => Endpoint::Traces(traces),
            (None, Some(base)) => Endpoint::Base(base),
            (None, None) => return Ok(None),
        };
        if let Some((name, protocol)) = PROTOCOL_VARS
            .iter()
            .find_map(|name| Some((*name, set(name)?)))
            && protocol != "http/protobuf"
        {
            return Err(ConfigError(format!(
                "{name}={protocol}: Gantry exports traces over http/protobuf only"
            )));
        }
        if let Some(exporter) = set("OTEL_TRACES_EXPORTER")
            && exporter != "otlp"
        {
            return Err(ConfigError(format!(
                "OTEL_TRACES_EXPORTER={exporter}: Gantry exports traces over otlp only"
            )));
        }
        Ok(Some(Config {
            endpoint,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "gantry".to_owned()),
            capture_content: set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        }))
    }

    /// The tracer provider: a batch processor (its own thread; the
    /// `OTEL_BSP_*` variables tune it) in front of the OTLP/HTTP exporter.
    pub(crate) fn provider(&self) -> Result<SdkTracerProvider, ConfigError> {
        // Given explicitly, as the spec says each spelling means.
        let url = match &self.endpoint {
            Endpoint::Traces(url) => url.clone(),
            Endpoint::Base(base) => format!("{}/v1/traces", base.trim_end_matches('/')),
        };
        // The exporter's reqwest client, like every other in the tree, is
        // built without a TLS provider of its own: the process's is ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = SpanExporter::builder()
            .with_http()
            .with_endpoint(url)
            .build()
            .map_err(|e| ConfigError(format!("the OTLP exporter cannot start: {e}")))?;
        let resource = Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        Ok(SdkTracerProvider::builder()
            .with_id_generator(crate::ids::TurnIds::default())
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<Config>, ConfigError> {
        Config::from_env(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn traces_are_off_without_an_endpoint() {
        assert_eq!(config(&[]).ok().flatten(), None);
        assert_eq!(config(&[("OTEL_SERVICE_NAME", "x")]).ok().flatten(), None);
        let disabled = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert_eq!(config(&disabled).ok().flatten(), None);
    }

    #[test]
    fn the_traces_endpoint_wins_and_the_service_is_named() {
        let c = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://b:4318/v1/traces",
            ),
            ("OTEL_SERVICE_NAME", "agents"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"),
        ]);
        let c = c.ok().flatten();
        assert_eq!(
            c,
            Some(Config {
                endpoint: Endpoint::Traces("http://b:4318/v1/traces".into()),
                service_name: "agents".into(),
                capture_content: true,
            })
        );
    }

    #[test]
    fn an_unsupported_protocol_is_an_error_that_names_it() {
        let e = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let Err(e) = e else {
            panic!("grpc accepted");
        };
        assert!(
            e.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
            "{e}"
        );
    }
}
