//! Gantry's control plane under load: a real `gantry control-plane serve`
//! process (SQLite file) with `BENCH_RUNNERS` runners connected over
//! loopback gRPC, one agent and `BENCH_THREADS` threads on each, measured on
//! the dispatch round trip of `POST /v1/threads/{id}/messages`: HTTP in,
//! `CreateUserMessageRequest` to the thread's runner, its first update back,
//! `202` out. Each runner is a light in-process client (the generated tonic
//! client, one connection each) that answers at once the way a runner does:
//! a turn running, its answer item, the turn completed.
//!
//! Prints the latency at `BENCH_CONCURRENCY` and at concurrency 1, the
//! throughput, and the control plane's RSS (idle with its runners, after
//! setup, peak).
//!
//! Run: `cargo bench -p gantry-cli --bench control_plane` (`BENCH_RUNNERS`
//! 200, `BENCH_THREADS` 3 per runner, `BENCH_MESSAGES` 2000,
//! `BENCH_CONCURRENCY` 32 by default).
//!
//! Replicas: `BENCH_REPLICAS=2` runs two `serve --nats` processes over one
//! store (NATS at `BENCH_NATS`, default `nats://127.0.0.1:4222`; the store
//! is the shared data dir's SQLite file, or `BENCH_STORE`, e.g. a
//! PostgreSQL URL, given as `--store`). Runner N dials replica N mod 2 and
//! message N goes to replica N mod 2's HTTP API, so half the requests are
//! routed to the other replica through NATS; RSS is printed per replica.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use futures_util::{StreamExt, TryStreamExt, stream};
use serde_json::{Value, json};

/// The model every runner offers and every agent uses.
const MODEL: &str = "bench-model";

/// Bound on each phase, so a broken control plane fails the bench instead
/// of hanging it. Never reached when things work.
const GUARD: Duration = Duration::from_secs(120);

/// Messages sent at concurrency 1 (at most `BENCH_MESSAGES`).
const SERIAL_MESSAGES: usize = 500;

/// The sizes the environment may change.
struct Knobs {
    runners: usize,
    threads: usize,
    messages: usize,
    concurrency: usize,
    replicas: usize,
}

impl Knobs {
    fn from_env() -> Self {
        Self {
            runners: env_or("BENCH_RUNNERS", 200),
            threads: env_or("BENCH_THREADS", 3),
            messages: env_or("BENCH_MESSAGES", 2000),
            concurrency: env_or("BENCH_CONCURRENCY", 32),
            replicas: env_or("BENCH_REPLICAS", 1),
        }
    }
}

/// A positive number from the environment, else `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

fn main() -> Result<()> {
    let knobs = Knobs::from_env();
    let scratch = tempfile::tempdir().context("cannot create a scratch dir")?;
    let data = scratch.path().join("data");
    // Runners are allowed before the control plane starts, as an operator would.
    let start = Instant::now();
    let tokens = add_runners(&data, knobs.runners)?;
    println!(
        "add-runner x {}: {:.1} s (one process each)",
        knobs.runners,
        start.elapsed().as_secs_f64()
    );
    let servers = (0..knobs.replicas)
        .map(|n| server::Server::start(&data, knobs.replicas > 1, n))
        .collect::<Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(bench(&servers, &tokens, &knobs));
    // Runner tasks end here, before the control plane does, so none of them
    // reports its channel closing as an error.
    runtime.shutdown_background();
    result
}

/// `gantry control-plane add-runner bench-N` for each runner: their tokens.
fn add_runners(data: &Path, count: usize) -> Result<Vec<String>> {
    (0..count)
        .map(|i| {
            let output = Command::new(env!("CARGO_BIN_EXE_gantry"))
                .args(["control-plane", "add-runner", &format!("bench-{i}")])
                .args(store_flag())
                .arg("--data-dir")
                .arg(data)
                .stdin(Stdio::null())
                .output()
                .context("cannot run gantry control-plane add-runner")?;
            ensure!(
                output.status.success(),
                "add-runner bench-{i} failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            let token = String::from_utf8(output.stdout)
                .context("add-runner printed a token that is not UTF-8")?;
            Ok(token.trim().to_owned())
        })
        .collect()
}

/// `--store BENCH_STORE` when it is set, else nothing (the data dir's SQLite).
fn store_flag() -> Vec<String> {
    std::env::var("BENCH_STORE")
        .map(|url| vec!["--store".to_owned(), url])
        .unwrap_or_default()
}

/// Awaits `future`, failing with `what` if it outlasts [`GUARD`].
async fn guarded<T>(what: &str, future: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(GUARD, future)
        .await
        .map_err(|_| anyhow!("timed out: {what}"))?
}

/// Connects the runners, sets up agents and threads, measures, prints.
async fn bench(servers: &[server::Server], tokens: &[String], knobs: &Knobs) -> Result<()> {
    let apis = servers
        .iter()
        .map(|s| api::Api::new(s.http))
        .collect::<Result<Vec<_>>>()?;
    let api = &apis[0];
    let rss = |field: &str| servers.iter().map(|s| s.rss_kib(field)).collect::<Vec<_>>();
    let rss_empty = rss("VmRSS");

    let start = Instant::now();
    let grpc: Vec<SocketAddr> = servers.iter().map(|s| s.grpc).collect();
    guarded(
        "connecting the runners",
        connect_runners(&grpc, tokens, knobs),
    )
    .await?;
    let connected = start.elapsed();
    // Among replicas, the first learns of the others' runners by their leases.
    let runner_ids = guarded("every runner listed connected", async {
        loop {
            let runners = api.get("/v1/runners").await?;
            let ids = connected_runners(&runners)?;
            if ids.len() >= knobs.runners {
                return Ok(ids);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    ensure!(
        runner_ids.len() == knobs.runners,
        "{} of {} runners are connected",
        runner_ids.len(),
        knobs.runners
    );
    let rss_idle = rss("VmRSS");
    println!(
        "{} runners registered and channels open: {:.0} ms",
        knobs.runners,
        connected.as_secs_f64() * 1000.0
    );

    let start = Instant::now();
    let agents = guarded(
        "creating the agents",
        create_agents(api, &runner_ids, knobs),
    )
    .await?;
    let agents_took = start.elapsed();
    let start = Instant::now();
    let threads = guarded("creating the threads", create_threads(api, &agents, knobs)).await?;
    let threads_took = start.elapsed();
    let rss_setup = rss("VmRSS");
    println!(
        "{} agents: {:.0} ms; {} threads: {:.0} ms (concurrency {})",
        agents.len(),
        agents_took.as_secs_f64() * 1000.0,
        threads.len(),
        threads_took.as_secs_f64() * 1000.0,
        knobs.concurrency
    );

    // Warm-up: one message per runner (connections, the first turn of each).
    let warm_up = knobs.runners.min(threads.len());
    guarded(
        "the warm-up messages",
        send_messages(&apis, &threads, warm_up, knobs.concurrency),
    )
    .await?;

    let (mut latencies, total) = guarded(
        "the concurrent messages",
        send_messages(&apis, &threads, knobs.messages, knobs.concurrency),
    )
    .await?;
    latencies.sort();
    println!(
        "dispatch round trip, {} messages at concurrency {}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:.0} messages/s",
        knobs.messages,
        knobs.concurrency,
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(percentile(&latencies, 1.0)),
        knobs.messages as f64 / total.as_secs_f64()
    );

    let serial = SERIAL_MESSAGES.min(knobs.messages);
    let (mut latencies, _) = guarded(
        "the serial messages",
        send_messages(&apis, &threads, serial, 1),
    )
    .await?;
    latencies.sort();
    println!(
        "dispatch round trip, {serial} messages one at a time: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(percentile(&latencies, 1.0)),
    );

    let peak = rss("VmHWM");
    for n in 0..servers.len() {
        println!(
            "control plane {} RSS: {:.1} MiB at start, {:.1} MiB with {} runners connected, {:.1} MiB after setup, peak {:.1} MiB",
            if servers.len() > 1 {
                format!("replica {n}")
            } else {
                "process".to_owned()
            },
            mib(rss_empty[n]),
            mib(rss_idle[n]),
            knobs.runners,
            mib(rss_setup[n]),
            mib(peak[n])
        );
    }
    Ok(())
}

/// Connects every runner, `concurrency` at a time; runner N to replica N
/// mod the number of replicas.
async fn connect_runners(grpc: &[SocketAddr], tokens: &[String], knobs: &Knobs) -> Result<()> {
    stream::iter(tokens.iter().enumerate())
        .map(|(n, token)| runner::connect(grpc[n % grpc.len()], token))
        .buffer_unordered(knobs.concurrency)
        .try_collect()
        .await
}

/// The ids of the connected runners in `GET /v1/runners`.
fn connected_runners(runners: &Value) -> Result<Vec<String>> {
    let runners = runners
        .as_array()
        .context("GET /v1/runners is not an array")?;
    Ok(runners
        .iter()
        .filter(|r| r["connected"] == true)
        .filter_map(|r| r["id"].as_str().map(str::to_owned))
        .collect())
}

/// One agent on each runner: their ids, in the runners' order.
async fn create_agents(
    api: &api::Api,
    runner_ids: &[String],
    knobs: &Knobs,
) -> Result<Vec<String>> {
    stream::iter(runner_ids)
        .map(|runner_id| async move {
            let body = json!({"runner_id": runner_id, "model": MODEL});
            let agent = api.post("/v1/agents", &body, 201).await?;
            agent["id"]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("an agent without an id: {agent}"))
        })
        .buffered(knobs.concurrency)
        .try_collect()
        .await
}

/// `knobs.threads` threads of each agent: their ids, interleaved across
/// runners, so consecutive messages go to different runners.
async fn create_threads(api: &api::Api, agents: &[String], knobs: &Knobs) -> Result<Vec<String>> {
    let wanted = (0..knobs.threads).flat_map(|_| agents);
    stream::iter(wanted)
        .map(|agent_id| async move {
            let path = format!("/v1/agents/{agent_id}/threads");
            let thread = api.post(&path, &json!({}), 201).await?;
            thread["id"]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("a thread without an id: {thread}"))
        })
        .buffered(knobs.concurrency)
        .try_collect()
        .await
}

/// Sends `count` messages over `threads` in turn, `concurrency` at a time,
/// message N through replica N mod the number of replicas: each one's round
/// trip, and the time they all took.
async fn send_messages(
    apis: &[api::Api],
    threads: &[String],
    count: usize,
    concurrency: usize,
) -> Result<(Vec<Duration>, Duration)> {
    ensure!(!threads.is_empty(), "no threads to send messages to");
    let start = Instant::now();
    let latencies = stream::iter(0..count)
        .map(|i| {
            let path = format!("/v1/threads/{}/messages", threads[i % threads.len()]);
            let api = &apis[i % apis.len()];
            async move {
                let sent = Instant::now();
                let accepted = api.post(&path, &json!({"text": "go"}), 202).await?;
                let took = sent.elapsed();
                // The 202 must be the turn this message started, not a stray reply.
                let request_id = accepted["request_id"].as_str().unwrap_or_default();
                ensure!(
                    accepted["turn_id"] == runner::turn_id(request_id).as_str(),
                    "unexpected 202 body: {accepted}"
                );
                Ok(took)
            }
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    Ok((latencies, start.elapsed()))
}

/// The value below which a fraction `q` of the `sorted` durations lie.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The control plane process.
mod server {
    use std::io::{BufRead, BufReader};
    use std::net::SocketAddr;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    use anyhow::{Context, Result, bail};

    /// A running `gantry control-plane serve`, killed when dropped.
    pub(crate) struct Server {
        child: Child,
        /// Where runners dial.
        pub grpc: SocketAddr,
        /// The HTTP API.
        pub http: SocketAddr,
    }

    impl Server {
        /// Serves the control plane of `data` on ephemeral loopback ports;
        /// as replica `n` on NATS (`BENCH_NATS`) when `replica`, over
        /// `BENCH_STORE` when set.
        pub(crate) fn start(data: &Path, replica: bool, n: usize) -> Result<Self> {
            let mut command = Command::new(env!("CARGO_BIN_EXE_gantry"));
            command.args(["control-plane", "serve"]);
            if replica {
                let nats = std::env::var("BENCH_NATS")
                    .unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
                let id = format!("bench-{}-{n}", std::process::id());
                command.args(["--nats", &nats, "--replica-id", &id]);
            }
            command.args(super::store_flag());
            let mut child = command
                .args([
                    "--grpc-listen",
                    "127.0.0.1:0",
                    "--http-listen",
                    "127.0.0.1:0",
                ])
                // A runner that stops answering fails the bench soon.
                .args(["--request-timeout-secs", "10"])
                .arg("--data-dir")
                .arg(data)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .context("cannot start gantry control-plane serve")?;
            match wait_listening(&mut child) {
                Ok((grpc, http)) => Ok(Self { child, grpc, http }),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    Err(e)
                }
            }
        }

        /// A memory figure of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB;
        /// 0 where there is no procfs.
        pub(crate) fn rss_kib(&self, field: &str) -> u64 {
            let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
                .unwrap_or_default();
            status
                .lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Reads the server's stderr up to the line naming its addresses, then
    /// keeps draining it so the server never blocks on it.
    fn wait_listening(child: &mut Child) -> Result<(SocketAddr, SocketAddr)> {
        let stderr = child
            .stderr
            .take()
            .context("no stderr from gantry control-plane serve")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut said = Vec::new();
        let addrs = loop {
            let Some(line) = lines.next() else {
                bail!(
                    "gantry control-plane serve stopped before listening: {}",
                    said.join("\n")
                );
            };
            let line = line.context("cannot read the control plane's stderr")?;
            if let Some(addrs) = listening(&line) {
                break addrs;
            }
            said.push(line);
        };
        std::thread::spawn(move || lines.for_each(drop));
        Ok(addrs)
    }

    /// The addresses of `gantry: control plane gRPC on A, HTTP on B`.
    fn listening(line: &str) -> Option<(SocketAddr, SocketAddr)> {
        let rest = line.strip_prefix("gantry: control plane gRPC on ")?;
        let (grpc, http) = rest.split_once(", HTTP on ")?;
        Some((grpc.trim().parse().ok()?, http.trim().parse().ok()?))
    }
}

/// The HTTP JSON API, as a user drives it.
mod api {
    use std::net::SocketAddr;

    use anyhow::{Context, Result, ensure};
    use serde_json::Value;

    /// A client of the control plane's HTTP API (keep-alive connections).
    pub(crate) struct Api {
        client: reqwest::Client,
        base: String,
    }

    impl Api {
        /// A client of the API at `addr`.
        pub(crate) fn new(addr: SocketAddr) -> Result<Self> {
            // reqwest builds a rustls config even for plain HTTP.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .tls_certs_only(std::iter::empty())
                .build()
                .context("cannot build the HTTP client")?;
            Ok(Self {
                client,
                base: format!("http://{addr}"),
            })
        }

        /// `GET path`: its JSON, which must come with `200`.
        pub(crate) async fn get(&self, path: &str) -> Result<Value> {
            self.call(self.client.get(format!("{}{path}", self.base)), path, 200)
                .await
        }

        /// `POST path` with `body`: the JSON answer, which must come with
        /// `status`.
        pub(crate) async fn post(&self, path: &str, body: &Value, status: u16) -> Result<Value> {
            let request = self
                .client
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/json")
                .body(body.to_string());
            self.call(request, path, status).await
        }

        async fn call(
            &self,
            request: reqwest::RequestBuilder,
            path: &str,
            status: u16,
        ) -> Result<Value> {
            let response = request
                .send()
                .await
                .with_context(|| format!("{path}: no answer"))?;
            let got = response.status().as_u16();
            let bytes = response
                .bytes()
                .await
                .with_context(|| format!("{path}: the body broke off"))?;
            ensure!(
                got == status,
                "{path}: {got} instead of {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
            serde_json::from_slice(&bytes).with_context(|| format!("{path}: the body is not JSON"))
        }
    }
}

/// A light runner: the generated tonic client answering requests at once.
mod runner {
    use std::net::SocketAddr;

    use anyhow::{Context, Result, anyhow};
    use futures_util::stream;
    use gantry_runner_protocol::v0_2 as pb;
    use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
    use gantry_runner_protocol::v0_2::client_message::Payload;
    use gantry_runner_protocol::v0_2::server_message::Request as RunnerRequest;
    use gantry_runner_protocol::validate::Validate;
    use tokio::sync::mpsc;
    use tonic::metadata::{Ascii, MetadataValue};
    use tonic::service::Interceptor;
    use tonic::transport::Channel;
    use tonic::{Request, Status, Streaming};

    use super::MODEL;

    /// Replies in flight from one runner before it waits for the channel.
    const OUTBOUND: usize = 64;

    /// Adds `authorization: Bearer <token>` to every call.
    #[derive(Clone)]
    struct Bearer(MetadataValue<Ascii>);

    impl Interceptor for Bearer {
        fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
            request
                .metadata_mut()
                .insert("authorization", self.0.clone());
            Ok(request)
        }
    }

    /// The turn a runner starts for the message request `request_id`.
    pub(crate) fn turn_id(request_id: &str) -> String {
        format!("turn-{request_id}")
    }

    /// Registers with `token`, opens the control channel and answers its
    /// requests in a task of its own until the channel ends.
    pub(crate) async fn connect(grpc: SocketAddr, token: &str) -> Result<()> {
        let bearer: MetadataValue<Ascii> = format!("Bearer {token}")
            .parse()
            .context("the runner token is not valid metadata")?;
        let channel = Channel::from_shared(format!("http://{grpc}"))
            .context("the gRPC address")?
            .connect()
            .await
            .context("cannot connect to the control plane")?;
        let mut client = AgentRunnerControlServiceClient::with_interceptor(channel, Bearer(bearer));
        let offer = pb::RegisterRunnerRequest {
            agent_sdks: vec![pb::AgentSdk {
                name: "gantry".into(),
                models: vec![pb::LlmModel {
                    name: MODEL.into(),
                    reasoning: Vec::new(),
                }],
            }],
        };
        client
            .register_runner(offer)
            .await
            .context("RegisterRunner")?;
        let (outbound, rx) = mpsc::channel(OUTBOUND);
        let replies = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
        let inbound = client
            .control_channel(replies)
            .await
            .context("ControlChannel")?
            .into_inner();
        tokio::spawn(async move {
            if let Err(e) = serve(inbound, outbound).await {
                eprintln!("bench runner: {e:#}");
            }
        });
        Ok(())
    }

    /// Answers every request of the channel, in order.
    async fn serve(
        mut inbound: Streaming<pb::ServerMessage>,
        outbound: mpsc::Sender<pb::ClientMessage>,
    ) -> Result<()> {
        while let Some(message) = inbound.message().await.context("the control channel")? {
            message.validate().context("an invalid request")?;
            let request_id = message.request_id.context("a request without request_id")?;
            let request = message.request.context("a message without a request")?;
            for payload in replies(&request_id, request) {
                let reply = pb::ClientMessage {
                    request_id: Some(request_id.clone()),
                    payload: Some(payload),
                };
                outbound
                    .send(reply)
                    .await
                    .map_err(|_| anyhow!("the control channel closed"))?;
            }
        }
        Ok(())
    }

    /// What a runner sends for `request`: agents and threads ready (the
    /// thread id is the request id); a message starts a turn that answers
    /// and completes.
    fn replies(request_id: &str, request: RunnerRequest) -> Vec<Payload> {
        match request {
            RunnerRequest::CreateAgentRequest(create) => {
                vec![Payload::AgentUpdate(pb::AgentUpdate {
                    agent_id: create.agent_id,
                    status: pb::AgentStatus::Ready.into(),
                })]
            }
            RunnerRequest::CreateThreadRequest(_) => {
                vec![Payload::ThreadUpdate(pb::ThreadUpdate {
                    thread_id: request_id.to_owned(),
                    status: pb::ThreadStatus::Ready.into(),
                })]
            }
            RunnerRequest::CreateUserMessageRequest(_) => {
                let turn = turn_id(request_id);
                let turn_update = |status: pb::TurnStatus| {
                    Payload::TurnUpdate(pb::TurnUpdate {
                        sdk_turn_id: turn.clone(),
                        status: status.into(),
                    })
                };
                vec![
                    turn_update(pb::TurnStatus::Running),
                    Payload::ItemUpdate(pb::ItemUpdate {
                        sdk_item_id: format!("{turn}-answer"),
                        status: pb::ItemStatus::Completed.into(),
                        item_type: pb::ItemType::AgentMessage.into(),
                        text: Some("done".into()),
                        command_execution_item: None,
                    }),
                    turn_update(pb::TurnStatus::Completed),
                ]
            }
            other => vec![Payload::RequestError(pb::RequestError {
                error_message: format!("the bench runner does not handle {other:?}"),
            })],
        }
    }
}
