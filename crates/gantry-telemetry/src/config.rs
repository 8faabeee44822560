//! The standard OpenTelemetry variables Gantry honours, read once at start.

use opentelemetry_otlp::{
    ExporterBuildError, SpanExporter, WithExportConfig as _, WithTonicConfig as _,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tonic::transport::ClientTlsConfig;

/// What the variables asked for, when they asked for traces at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (over HTTP `/v1/traces` appended;
    /// over gRPC used as is, the service naming the method).
    pub endpoint: Endpoint,
    /// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`.
    pub protocol: Protocol,
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

/// How spans are sent: the values of the protocol variables this build has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: a POST of the protobuf messages.
    HttpProtobuf,
    /// `grpc`: the collector's `TraceService/Export` over HTTP/2.
    Grpc,
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
        let protocol = match PROTOCOL_VARS
            .iter()
            .find_map(|name| Some((*name, set(name)?)))
        {
            None => Protocol::HttpProtobuf,
            Some((_, p)) if p == "http/protobuf" => Protocol::HttpProtobuf,
            Some((_, p)) if p == "grpc" => Protocol::Grpc,
            Some((name, protocol)) => {
                return Err(ConfigError(format!(
                    "{name}={protocol}: Gantry exports traces over http/protobuf or grpc only"
                )));
            }
        };
        if let Some(exporter) = set("OTEL_TRACES_EXPORTER")
            && exporter != "otlp"
        {
            return Err(ConfigError(format!(
                "OTEL_TRACES_EXPORTER={exporter}: Gantry exports traces over otlp only"
            )));
        }
        Ok(Some(Config {
            endpoint,
            protocol,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "gantry".to_owned()),
            capture_content: set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        }))
    }

    /// The tracer provider: a batch processor (its own thread; the
    /// `OTEL_BSP_*` variables tune it) in front of the OTLP exporter.
    ///
    /// Over gRPC, called inside a Tokio runtime that outlives the
    /// provider: the exporter's channel runs as a task on it, which the
    /// batch processor's thread sends each export to.
    pub(crate) fn provider(&self) -> Result<SdkTracerProvider, ConfigError> {
        // The exporters' clients, like every other in the tree, are built
        // without a TLS provider of their own: the process's is ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cannot =
            |e: ExporterBuildError| ConfigError(format!("the OTLP exporter cannot start: {e}"));
        let exporter = match self.protocol {
            Protocol::HttpProtobuf => {
                // Given explicitly, as the spec says each spelling means.
                let url = match &self.endpoint {
                    Endpoint::Traces(url) => url.clone(),
                    Endpoint::Base(base) => format!("{}/v1/traces", base.trim_end_matches('/')),
                };
                SpanExporter::builder()
                    .with_http()
                    .with_endpoint(url)
                    .build()
                    .map_err(cannot)?
            }
            Protocol::Grpc => {
                // The channel spawns its task as it is built, which panics
                // outside a runtime: an error instead.
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err(ConfigError(
                        "the OTLP/gRPC exporter needs a Tokio runtime to start in".into(),
                    ));
                }
                // Both spellings as given: gRPC has no per-signal path.
                let (Endpoint::Traces(url) | Endpoint::Base(url)) = &self.endpoint;
                let mut builder = SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(url.clone());
                // The exporter's own default for https trusts no root.
                if url
                    .get(..6)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https:"))
                {
                    builder = builder.with_tls_config(ClientTlsConfig::new().with_native_roots());
                }
                builder.build().map_err(cannot)?
            }
        };
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
                protocol: Protocol::HttpProtobuf,
                service_name: "agents".into(),
                capture_content: true,
            })
        );
    }

    #[test]
    fn grpc_is_asked_for_by_either_protocol_variable_the_traces_one_first() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4317");
        let protocol = |vars: &[(&str, &str)]| config(vars).ok().flatten().map(|c| c.protocol);
        assert_eq!(protocol(&[base]), Some(Protocol::HttpProtobuf));
        assert_eq!(
            protocol(&[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
            Some(Protocol::Grpc)
        );
        assert_eq!(
            protocol(&[
                base,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            ]),
            Some(Protocol::Grpc)
        );
        assert_eq!(
            protocol(&[
                base,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ]),
            Some(Protocol::HttpProtobuf)
        );
    }

    #[test]
    fn an_unsupported_protocol_is_an_error_that_names_it() {
        let e = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]);
        let Err(e) = e else {
            panic!("http/json accepted");
        };
        assert!(
            e.to_string()
                .contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"),
            "{e}"
        );
    }

    #[test]
    fn the_grpc_exporter_starts_only_inside_a_runtime() {
        let c = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let Ok(Some(c)) = c else {
            panic!("grpc refused");
        };
        let Err(e) = c.provider() else {
            panic!("started without a runtime");
        };
        assert!(e.to_string().contains("Tokio runtime"), "{e}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let provider = runtime.block_on(async { c.provider() });
        assert!(provider.is_ok(), "{:?}", provider.err());
    }
}
