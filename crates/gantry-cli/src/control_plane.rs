//! `gantry control-plane`: Gantry's own control plane, which runners dial
//! over `companyhelm.runner.v1` gRPC and users drive over an HTTP JSON API,
//! and the commands that add the runners allowed to connect and the API's
//! bearer tokens.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use gantry_control_plane::github::{GithubApp, GithubInstallations};
use gantry_control_plane::store::{
    CONTROL_PLANE_DB, ControlPlaneStore, PostgresControlPlaneStore, SqliteControlPlaneStore,
    redacted,
};
use gantry_control_plane::{
    self as control_plane, Cluster, ControlPlane, ControlPlaneOptions, DEFAULT_GRPC_ADDR,
    DEFAULT_HTTP_ADDR,
};
use tokio::net::TcpListener;

use crate::signals::stop_signal;
use crate::store::{Location, Password};

/// Examples shown under `--help`.
const EXAMPLES: &str = "\
Examples:
  # Allow a runner to connect; its token is printed once, on stdout.
  gantry control-plane add-runner builder-1 > builder-1.token

  # Serve runners on :7400 (gRPC) and users on :7401 (HTTP JSON API).
  gantry control-plane serve

  # Then, with a runner connected (POSTs must say application/json):
  J='content-type: application/json'
  curl -s localhost:7401/v1/runners
  curl -s -H \"$J\" localhost:7401/v1/agents -d '{\"model\": \"gpt-4.1\"}'
  curl -s -H \"$J\" localhost:7401/v1/agents/AGENT/threads -d '{}'
  curl -s -H \"$J\" localhost:7401/v1/threads/THREAD/messages -d '{\"text\": \"fix the build\"}'
  curl -N localhost:7401/v1/threads/THREAD/events
  curl -N localhost:7401/v1/events
  curl -s localhost:7401/openapi.json

  # API tokens: once one exists (and always when the API listens beyond
  # loopback), every call but /openapi.json needs one.
  gantry control-plane create-token --name alice > alice.token
  gantry control-plane create-token --name dashboard --read-only > dashboard.token
  curl -s -H \"authorization: Bearer $(cat alice.token)\" localhost:7401/v1/runners
  gantry control-plane list-tokens
  gantry control-plane revoke-token alice

State (runners' token hashes, agents, threads, history) is kept in
control-plane.db in the data dir, or in the PostgreSQL database --store
names, so a restart loses nothing; runners reconnect by themselves.

  # On PostgreSQL (the database is created if missing; replicas share it):
  gantry control-plane serve --store postgres://gantry@db.internal/gantry_cp
  gantry control-plane add-runner builder-1 --store postgres://gantry@db.internal/gantry_cp

  # Replicas: several serving one store, with NATS (JetStream) between them:
  # a request reaches a runner held by another replica through NATS, and
  # every replica's thread events carry every update.
  gantry control-plane serve --store postgres://... --nats nats://127.0.0.1:4222";

/// Gantry's own control plane: runners dial it, users drive it over HTTP.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct ControlPlaneArgs {
    /// The control plane's store: `postgres://USER@HOST[:PORT]/DATABASE`
    /// (created if missing; replicas may share it), or `sqlite://FILE`.
    /// Default: control-plane.db in the data dir. A database of its own,
    /// never the engine's store (`--store` of the engine's commands), whose
    /// tables share names with it; hence its own variable, not GANTRY_STORE.
    ///
    /// The password: --store-password-file, else PGPASSWORD, else the
    /// passfile (PGPASSFILE, else ~/.pgpass). Not in the URL: a command
    /// line is readable by every process (/proc/PID/cmdline).
    ///
    ///   --store postgres://gantry@db.internal/gantry_cp
    #[arg(
        long = "store",
        env = "GANTRY_CONTROL_PLANE_STORE",
        value_name = "URL",
        global = true,
        verbatim_doc_comment
    )]
    pub store: Option<String>,

    /// A file holding the PostgreSQL store's password (the whole file, less
    /// one trailing newline). It must be private to its owner (chmod 600).
    #[arg(
        long = "store-password-file",
        env = "GANTRY_CONTROL_PLANE_STORE_PASSWORD_FILE",
        value_name = "FILE",
        global = true
    )]
    pub store_password_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: ControlPlaneCommand,
}

/// `gantry control-plane ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ControlPlaneCommand {
    /// Serve runners (gRPC) and users (HTTP JSON API) until SIGINT/SIGTERM.
    ///
    /// Prints one line on stderr once both listen:
    /// `gantry: control plane gRPC on ADDR, HTTP on ADDR`.
    #[command(after_help = EXAMPLES)]
    Serve(Box<ServeArgs>),
    /// Allow a runner to connect: prints its bearer token once on stdout
    /// (only its hash is kept; a lost token means adding the runner anew).
    #[command(
        after_help = "Example:\n  gantry control-plane add-runner builder-1 > builder-1.token"
    )]
    AddRunner(AddRunnerArgs),
    /// Create a bearer token for the HTTP API: printed once on stdout (only
    /// its hash is kept). Once any token exists, every API call but
    /// `GET /openapi.json` needs one (`Authorization: Bearer <token>`).
    #[command(
        after_help = "Example:\n  gantry control-plane create-token --name alice > alice.token\n  \
                      gantry control-plane create-token --name dashboard --read-only > dashboard.token"
    )]
    CreateToken(CreateTokenArgs),
    /// List the HTTP API's tokens (names, ids, read-only or not, dates;
    /// the tokens themselves are not kept).
    ListTokens,
    /// Revoke an HTTP API token by name; a running server refuses it from
    /// its next request on.
    RevokeToken(RevokeTokenArgs),
}

/// `gantry control-plane create-token`.
#[derive(Debug, Args)]
pub(crate) struct CreateTokenArgs {
    /// A unique name for the token (who or what uses it).
    #[arg(long)]
    pub name: String,
    /// It may only read (`GET`, `HEAD`: list and follow, not act): else 403.
    #[arg(long)]
    pub read_only: bool,
}

/// `gantry control-plane revoke-token`.
#[derive(Debug, Args)]
pub(crate) struct RevokeTokenArgs {
    /// The token's name.
    pub name: String,
}

/// `gantry control-plane serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address runners dial (`HOST:PORT`; port 0 picks a free one).
    #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_GRPC_ADDR)]
    pub grpc_listen: String,

    /// Address of the HTTP JSON API (`HOST:PORT`; port 0 picks a free one).
    /// Beyond loopback, every call needs an API token (create-token).
    #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_HTTP_ADDR)]
    pub http_listen: String,

    /// A host name the HTTP API answers to, besides the listen address's
    /// (and localhost when it listens on loopback): requests naming another
    /// `Host` are refused (421), as are browser pages of another `Origin`
    /// (403). Repeatable.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,

    /// Seconds a runner gets to answer a request before the API answers 504.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_secs: u64,

    /// GitHub App id (or client id): runners may then ask for installation
    /// tokens, which their `git`/`gh` commands get. Needs --github-app-key-file.
    #[arg(long, value_name = "ID", requires = "github_app_key_file")]
    pub github_app_id: Option<String>,

    /// The GitHub App's private key (PEM, as GitHub hands it out).
    #[arg(long, value_name = "FILE", requires = "github_app_id")]
    pub github_app_key_file: Option<PathBuf>,

    /// GitHub's REST API (GitHub Enterprise Server: `https://HOST/api/v3`).
    #[arg(long, value_name = "URL", default_value = GithubApp::DEFAULT_API_BASE_URL)]
    pub github_api_url: String,

    /// Limit a runner to an installation: `RUNNER=INSTALLATION_ID`
    /// (repeatable). Without any, every runner may use every installation.
    #[arg(long = "github-installation", value_name = "RUNNER=ID", value_parser = parse_installation)]
    pub github_installations: Vec<(String, i64)>,

    /// Seconds between the heartbeats asked of runners of protocol 0.7; one
    /// that misses two in a row is unhealthy and gets no new work.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_secs: u64,

    /// On SIGTERM or SIGINT, seconds to wait for the requests in flight to
    /// be answered before closing runner channels: meanwhile no new runner
    /// is taken and /readyz answers 503, so a load balancer and runners
    /// with several --control-plane URLs move to another replica.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub drain_secs: u64,

    /// Run as one of several replicas sharing this store: NATS with
    /// JetStream at URL routes requests to the replica holding a runner's
    /// channel and carries thread updates to every replica's followers.
    /// Replicas sign what they send each other with a secret kept in the
    /// store, so a NATS client that is not one cannot pass for one; lock
    /// NATS itself down too (users and permissions: see the book).
    /// Without it, one process serves everything.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,

    /// This replica's id among the replicas (letters, digits, `-`, `_`;
    /// default: a new one at each start).
    #[arg(long, value_name = "ID", requires = "nats")]
    pub replica_id: Option<String>,
}

/// `RUNNER=ID` with a positive id.
fn parse_installation(text: &str) -> Result<(String, i64), String> {
    let (runner, id) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: use RUNNER=INSTALLATION_ID"))?;
    let id: i64 = id
        .trim()
        .parse()
        .ok()
        .filter(|id| *id >= 1)
        .ok_or_else(|| format!("`{text}`: the installation id must be a positive number"))?;
    if runner.trim().is_empty() {
        return Err(format!("`{text}`: the runner name is empty"));
    }
    Ok((runner.trim().to_owned(), id))
}

/// `gantry control-plane add-runner`.
#[derive(Debug, Args)]
pub(crate) struct AddRunnerArgs {
    /// A unique name for the runner (shown in `GET /v1/runners`).
    pub name: String,

    /// Pin the companyhelm.runner.v1 version the runner speaks (`0.2` or
    /// `0.7`). Without it the version is detected at each registration:
    /// 0.7 when an SDK of the registration says its status (0.2.0 has no
    /// such field), else 0.2.
    #[arg(long, value_name = "VERSION")]
    pub protocol: Option<gantry_control_plane::ProtocolVersion>,
}

/// Runs `gantry control-plane` on the control plane of `data_dir` (or the
/// store `--store` names).
pub(crate) async fn run(data_dir: PathBuf, args: ControlPlaneArgs) -> Result<ExitCode> {
    crate::setup::create_data_dir(&data_dir)?;
    let location = match args.store.as_deref().filter(|u| !u.trim().is_empty()) {
        Some(url) => Location::parse(url)?,
        None => Location::Sqlite(data_dir.join(CONTROL_PLANE_DB)),
    };
    let password = Password::for_store(&location, args.store_password_file.as_deref())?;
    let opened = open_store(&location, password.as_ref()).await?;
    let store = opened.store.clone();
    let result = match args.command {
        ControlPlaneCommand::Serve(args) => serve(opened, *args).await,
        ControlPlaneCommand::AddRunner(args) => {
            add_runner(store.as_ref(), &args.name, args.protocol).await
        }
        ControlPlaneCommand::CreateToken(args) => {
            create_token(store.as_ref(), &args.name, args.read_only).await
        }
        ControlPlaneCommand::ListTokens => list_tokens(store.as_ref()).await,
        ControlPlaneCommand::RevokeToken(args) => revoke_token(store.as_ref(), &args.name).await,
    };
    store.close().await;
    result
}

/// An open control-plane store and how to name it (no password).
struct Opened {
    store: Arc<dyn ControlPlaneStore>,
    name: String,
}

/// Opens the control plane's store at `location`.
async fn open_store(location: &Location, password: Option<&Password>) -> Result<Opened> {
    match location {
        Location::Sqlite(path) => {
            let store = SqliteControlPlaneStore::open(path).await.with_context(|| {
                format!("cannot open the control plane's store {}", path.display())
            })?;
            Ok(Opened {
                store: Arc::new(store),
                name: path.display().to_string(),
            })
        }
        Location::Postgres(url) => {
            let name = redacted(url);
            let store =
                PostgresControlPlaneStore::open_with_password(url, password.map(Password::expose))
                    .await
                    .with_context(|| format!("cannot open the control plane's store {name}"))?;
            Ok(Opened {
                store: Arc::new(store),
                name,
            })
        }
    }
}

/// Serves until a signal.
async fn serve(opened: Opened, args: ServeArgs) -> Result<ExitCode> {
    let options = ControlPlaneOptions {
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        github: github_app(&args)?,
        allowed_hosts: args.allowed_hosts.clone(),
        heartbeat: Duration::from_secs(args.heartbeat_secs),
        drain: Duration::from_secs(args.drain_secs),
        cluster: match &args.nats {
            Some(url) => Some(Cluster::connect(url, args.replica_id.clone()).await?),
            None => None,
        },
        ..ControlPlaneOptions::default()
    };
    let cluster = options.cluster.clone();
    let cp = ControlPlane::open(opened.store, options)
        .await
        .with_context(|| format!("cannot open the control plane on {}", opened.name))?;
    let grpc = crate::listen::tcp(&args.grpc_listen, "--grpc-listen").await?;
    let http = crate::listen::tcp(&args.http_listen, "--http-listen").await?;
    let grpc_addr = local_addr(&grpc)?;
    let http_addr = local_addr(&http)?;
    if !http_addr.ip().is_loopback() {
        let has_tokens = cp
            .has_api_tokens()
            .await
            .context("cannot read the API tokens")?;
        if !has_tokens {
            eprintln!(
                "gantry: warning: the HTTP API on {http_addr} is reachable from other machines, \
                 so every call needs an API token, and none exists: create one with \
                 `gantry control-plane create-token --name NAME`"
            );
        }
        if http_addr.ip().is_unspecified() && args.allowed_hosts.is_empty() {
            eprintln!(
                "gantry: warning: the HTTP API answers to localhost only until you name this \
                 machine with --allowed-host NAME (requests naming another Host get 421)"
            );
        }
    }
    // Handlers first: a signal right after the line below stops it gracefully.
    let stop = stop_signal();
    // The one line scripts wait for (the ports, when 0 was asked for).
    eprintln!("gantry: control plane gRPC on {grpc_addr}, HTTP on {http_addr}");
    if let Some(cluster) = &cluster {
        eprintln!("gantry: replica {} on NATS", cluster.replica());
    }
    control_plane::serve(cp, grpc, http, stop).await?;
    eprintln!("gantry: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Adds a runner and prints its token, and nothing else, on stdout.
async fn add_runner(
    store: &dyn ControlPlaneStore,
    name: &str,
    protocol: Option<gantry_control_plane::ProtocolVersion>,
) -> Result<ExitCode> {
    let (runner, token) = control_plane::add_runner(store, name, protocol).await?;
    println!("{token}");
    eprintln!(
        "gantry: added runner {} ({}); its token above is shown only this once",
        runner.name, runner.id
    );
    Ok(ExitCode::SUCCESS)
}

/// Creates an API token and prints it, and nothing else, on stdout.
async fn create_token(
    store: &dyn ControlPlaneStore,
    name: &str,
    read_only: bool,
) -> Result<ExitCode> {
    let (record, token) = control_plane::create_api_token(store, name, read_only).await?;
    println!("{token}");
    eprintln!(
        "gantry: created {} API token {} ({}); it is shown only this once. Every HTTP API call \
         now needs a token: `Authorization: Bearer <token>`",
        access(record.read_only),
        record.name,
        record.id
    );
    Ok(ExitCode::SUCCESS)
}

/// What a token may do, as said to people.
fn access(read_only: bool) -> &'static str {
    if read_only { "read-only" } else { "read-write" }
}

/// Lists the API tokens: name, id, access, creation time (UTC).
async fn list_tokens(store: &dyn ControlPlaneStore) -> Result<ExitCode> {
    let tokens = store
        .api_tokens()
        .await
        .context("cannot read the API tokens")?;
    if tokens.is_empty() {
        eprintln!("gantry: no API tokens (the HTTP API is open on loopback only)");
    }
    for token in tokens {
        let created = chrono::DateTime::from_timestamp_millis(token.created_at)
            .map_or_else(|| token.created_at.to_string(), |t| t.to_rfc3339());
        let access = access(token.read_only);
        println!("{}\t{}\t{access}\t{created}", token.name, token.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// Revokes an API token by name; exits 1 if there is none of that name.
async fn revoke_token(store: &dyn ControlPlaneStore, name: &str) -> Result<ExitCode> {
    let revoked = control_plane::revoke_api_token(store, name).await;
    if revoked.context("cannot revoke the API token")? {
        eprintln!("gantry: revoked API token {name}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("gantry: no API token named {name:?}");
        Ok(ExitCode::FAILURE)
    }
}

/// The GitHub App the flags configure, if any.
fn github_app(args: &ServeArgs) -> Result<Option<Arc<dyn GithubInstallations>>> {
    let (Some(id), Some(key_file)) = (&args.github_app_id, &args.github_app_key_file) else {
        return Ok(None);
    };
    let key = std::fs::read_to_string(key_file)
        .with_context(|| format!("cannot read the GitHub App key {}", key_file.display()))?;
    let mut builder = GithubApp::builder(id.clone(), key).api_base_url(args.github_api_url.clone());
    if !args.github_installations.is_empty() {
        let mut allowed: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (runner, id) in &args.github_installations {
            allowed.entry(runner.clone()).or_default().push(*id);
        }
        builder = builder.runner_installations(allowed);
    }
    let app = builder.build().context("the GitHub App")?;
    Ok(Some(Arc::new(app)))
}

fn local_addr(listener: &TcpListener) -> Result<SocketAddr> {
    listener
        .local_addr()
        .context("cannot read the bound address")
}
