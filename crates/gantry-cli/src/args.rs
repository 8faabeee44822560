//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Gantry: one runtime for coding agents.
///
/// Runs an agent loop (model + shell and file tools) in a workspace and
/// records every step as an event in a local SQLite store, so threads can be
/// resumed, inspected and recovered after a crash.
///
/// Try it without an API key or network, in a checkout of Gantry, with the
/// scripted demo model (elsewhere: the last example of `gantry exec --help`):
///
///   gantry exec --model scripted:examples/demo.json "write a greeting script"
#[derive(Debug, Parser)]
// Verbatim: the example keeps its indent.
#[command(
    name = "gantry",
    version,
    propagate_version = true,
    verbatim_doc_comment
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Where threads are stored [default: $XDG_DATA_HOME/gantry, else ~/.local/share/gantry].
    #[arg(long, global = true, env = "GANTRY_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Configuration file: providers, models, default model
    /// [default: $XDG_CONFIG_HOME/gantry/config.toml, else ~/.config/gantry/config.toml].
    #[arg(long, global = true, env = "GANTRY_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Let this variable of gantry's environment through to the agent's
    /// commands, MCP and language servers although it is hidden from them:
    /// a name that looks like a secret (`*_API_KEY`, `*_TOKEN`, `*SECRET*`,
    /// ...), one of gantry's own settings (`GANTRY_*`), or a value carrying
    /// credentials (a URL with `user:password@`). Repeatable, or
    /// comma-separated in GANTRY_PASS_ENV.
    #[arg(
        long = "pass-env",
        global = true,
        env = "GANTRY_PASS_ENV",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub pass_env: Vec<String>,

    /// Trust DIR and the folders inside it (repeatable): there the
    /// `allowed-tools` of the workspace's own skills (`.gantry/skills`,
    /// `.claude/skills`) are allowed without asking while the skill is
    /// loaded. In an untrusted workspace such a skill adds instructions but
    /// no rights, since the agent (or a cloned repository) can write it.
    /// Also `trusted_workspaces = [...]` in the config file. Never read
    /// from the environment, which a workspace can set (direnv).
    #[arg(long = "trust-workspace", global = true, value_name = "DIR")]
    pub trust_workspace: Vec<PathBuf>,

    /// Run the login profile before every command (`bash -lc`) instead of
    /// once per profile into a snapshot that commands source (the default;
    /// it is taken again when a profile file changes).
    // 1, yes, on, true (and their opposites) from the environment.
    #[arg(long, global = true, env = "GANTRY_NO_SHELL_SNAPSHOT",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub no_shell_snapshot: bool,

    /// Start even though the data dir lies inside the workspace or the temp
    /// dir on a machine that gives sandboxed commands no namespaces of their
    /// own, where those commands could read its keys (refused otherwise).
    // 1, yes, on, true (and their opposites) from the environment.
    #[arg(long, global = true, env = "GANTRY_ALLOW_EXPOSED_DATA_DIR",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_exposed_data_dir: bool,

    /// How diagnostics go to stderr (their level: GANTRY_LOG, e.g.
    /// `info`): `text` for people; `json`, one object per line with a
    /// timestamp and, inside a turn, its `thread_id`, `turn_id`,
    /// `trace_id` and `span_id` (those of its `invoke_agent` span), for
    /// log collectors.
    #[arg(long, global = true, env = "GANTRY_LOG_FORMAT", value_enum,
          default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
}

/// `--log-format`: how diagnostics are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where the engine keeps its threads: flattened into every command that
/// runs an engine (not global: `gantry control-plane` has a store of its own).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct StoreArg {
    /// The engine's store: `postgres://USER@HOST[:PORT]/DATABASE`
    /// (the database is created if missing; one gantry process uses it at a
    /// time), or `sqlite://FILE`. Else `store = "URL"` in the config file,
    /// else the SQLite file in the data dir. The data dir stays in use for
    /// the rest: the lock, shell snapshots, and `secret.key`, which seals
    /// the API keys stored (a process opening the same database elsewhere
    /// needs a copy of it to read them).
    ///
    /// The password: --store-password-file, else PGPASSWORD, else the
    /// passfile (PGPASSFILE, else ~/.pgpass). Not in the URL: a command
    /// line is readable by every process (/proc/PID/cmdline).
    ///
    ///   --store postgres://gantry@db.internal/gantry
    #[arg(
        long = "store",
        env = "GANTRY_STORE",
        value_name = "URL",
        verbatim_doc_comment
    )]
    pub url: Option<String>,

    /// A file holding the PostgreSQL store's password (the whole file, less
    /// one trailing newline). It must be private to its owner (chmod 600).
    #[arg(
        long = "store-password-file",
        env = "GANTRY_STORE_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub password_file: Option<PathBuf>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one turn headless: live view on stderr, final answer on stdout.
    ///
    /// Exit code 0 when the turn completed, 1 when it failed, 130 when it was
    /// interrupted (Ctrl-C), 2 for usage or setup errors.
    #[command(after_help = crate::exec::EXAMPLES)]
    Exec(ExecArgs),
    /// Run the daemon: the engine and its protocol listeners.
    ///
    /// Serves `a3s.code.agent.v1.CodeAgentService` over gRPC (with
    /// `grpc.health.v1` and server reflection) until SIGINT/SIGTERM or the
    /// `Shutdown` rpc; then stops accepting, lets running calls finish for
    /// the grace period, interrupts what still runs and flushes the store.
    ///
    ///   gantry serve --listen-addr 127.0.0.1:4088 --workspace ~/src/app
    #[command(verbatim_doc_comment)]
    Serve(ServeArgs),
    /// Run as a runner under a control plane (`companyhelm.runner.v1`).
    ///
    /// Dials the control plane, registers the models it serves, and runs
    /// the agents, threads and messages it is sent, reporting every turn
    /// and item back; reconnects by itself when the channel drops.
    ///
    ///   gantry runner --control-plane http://cp:7400 --token-file runner.token
    #[command(verbatim_doc_comment, after_help = crate::runner::EXAMPLES)]
    Runner(crate::runner::RunnerArgs),
    /// Gantry's own control plane: runners dial it, users drive it over HTTP.
    ///
    ///   gantry control-plane add-runner builder-1 > builder-1.token
    ///   gantry control-plane serve
    #[command(verbatim_doc_comment)]
    ControlPlane(crate::control_plane::ControlPlaneArgs),
    /// Speak the CodeWhale app-server protocol on stdin/stdout (JSON-RPC).
    ///
    ///   gantry codewhale --stdio --workspace ~/src/app
    #[command(verbatim_doc_comment)]
    Codewhale(crate::codewhale::CodewhaleArgs),
    /// Be an Agent Client Protocol agent on stdin/stdout, for editors.
    ///
    /// Zed, JetBrains IDEs, Neovim and other ACP clients spawn this and
    /// speak JSON-RPC on its stdin/stdout (stdout carries protocol lines
    /// only; logs go to stderr). Each ACP session is a Gantry thread in the
    /// data dir, so `gantry threads` and the other protocols see it, and a
    /// later `gantry acp` loads it. In Zed's settings.json:
    ///
    ///   "agent_servers": { "Gantry": { "command": "gantry", "args": ["acp"] } }
    #[command(verbatim_doc_comment, after_help = crate::acp::EXAMPLES)]
    Acp(crate::acp::AcpArgs),
    /// List and show stored threads.
    #[command(subcommand)]
    Threads(ThreadsCommand),
    /// Scheduled jobs `gantry serve` runs: shell commands, or agent turns
    /// in a thread of their own.
    #[command(subcommand)]
    Jobs(crate::jobs::JobsCommand),
    /// Bearer tokens of the HTTP API (`gantry serve --http-addr`).
    ///
    /// Without any token, the API answers loopback callers only; once one
    /// exists, every call needs one.
    ///
    ///   gantry tokens create --name ci --read-only > ci.token
    #[command(subcommand, verbatim_doc_comment)]
    Tokens(crate::http::TokensCommand),
    /// Print the completion script of a shell: bash, zsh, fish, elvish, powershell.
    #[command(after_help = crate::completions::EXAMPLES)]
    Completions(crate::completions::CompletionsArgs),
}

/// Where `gantry serve` keeps its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StorageBackend {
    /// Nothing is written: threads live as long as the process.
    Memory,
    /// The store `--store` names, by default the SQLite file in the data dir.
    File,
}

/// `gantry serve --max-sandbox`: a sandbox mode, by its CLI name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SandboxCeiling {
    /// Commands read, never write, never reach the network.
    ReadOnly,
    /// Commands write in their workspace and temp dir only.
    WorkspaceWrite,
    /// No ceiling: a client may run commands unsandboxed.
    DangerFullAccess,
}

impl From<SandboxCeiling> for gantry_types::SandboxMode {
    fn from(ceiling: SandboxCeiling) -> Self {
        match ceiling {
            SandboxCeiling::ReadOnly => Self::ReadOnly,
            SandboxCeiling::WorkspaceWrite => Self::WorkspaceWrite,
            SandboxCeiling::DangerFullAccess => Self::DangerFullAccess,
        }
    }
}

/// `gantry serve`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("codewhale_listener")
    .multiple(true)
    .args(["codewhale_addr", "codewhale10_addr"])))]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArg,

    /// gRPC listen address: `HOST:PORT` (port 0 picks a free one), or
    /// `unix:PATH`, a Unix socket only the server's user may open; its
    /// calls need no token (the A3S SDK dials `unix:PATH` as it is given).
    #[arg(long, value_name = "HOST:PORT|unix:PATH", default_value = proto_code_agent::DEFAULT_ADDR)]
    pub listen_addr: String,

    /// Workspace of sessions that name none [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// `file`: the store `--store` names (by default the SQLite file in the
    /// data dir); `memory`: nothing written.
    #[arg(long, value_enum, default_value = "file")]
    pub storage_backend: StorageBackend,

    /// File holding a bearer token every call must carry
    /// (`authorization: Bearer <token>`).
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// TLS private key (PEM); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Return providers' API keys from GetProvider and ListProviders to
    /// authenticated callers (the token of --auth-token-file, or the
    /// server's user on a `unix:` socket), as A3S does; others still get
    /// them masked. Needs --auth-token-file or a `unix:` listen address.
    #[arg(long)]
    pub reveal_provider_keys: bool,

    /// Seconds running calls may go on after a stop is asked for.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub grace_secs: u64,

    /// Make the `Shutdown` rpc stop the process. Without it, `Shutdown`
    /// shuts the agent down (running turns stopped, state flushed, back to
    /// not initialized) and the server keeps serving, as A3S's server does;
    /// SIGINT and SIGTERM always stop the process.
    #[arg(long)]
    pub exit_on_shutdown: bool,

    /// Also serve the CodeWhale app-server protocol over HTTP here
    /// (`HOST:PORT`, e.g. 127.0.0.1:8787), on the same engine.
    #[arg(long, value_name = "HOST:PORT")]
    pub codewhale_addr: Option<String>,

    /// Also serve CodeWhale 0.10 (0.10.2) over HTTP here, beside or
    /// instead of the seed's 0.8.59 on --codewhale-addr: the same threads.
    #[arg(long, value_name = "HOST:PORT")]
    pub codewhale10_addr: Option<String>,

    /// File holding the bearer token CodeWhale HTTP calls must carry (on
    /// every CodeWhale listener).
    #[arg(long, value_name = "FILE", requires = "codewhale_listener")]
    pub codewhale_token_file: Option<PathBuf>,

    /// Also serve DIR as a Pando instance (repeat for more dirs), on the
    /// same engine: JSON-RPC 2.0 on a ZeroMQ ROUTER and events on a PUB
    /// socket, both on 127.0.0.1 at the ports Pando derives from DIR's
    /// path. Pando's clients find it through DIR/.pando/ipc.lock and
    /// /tmp/pando-instances/; its sessions are the threads whose
    /// workspace is DIR. Refused when another instance already serves DIR.
    #[arg(long, value_name = "DIR")]
    pub pando: Vec<PathBuf>,

    /// Milliseconds between Pando `instance.heartbeat`s (tests shorten it).
    #[arg(long, value_name = "MS", default_value_t = 5000, hide = true)]
    pub pando_heartbeat_ms: u64,

    /// Also serve Rome OS's agent runner here (`HOST:PORT`, e.g.
    /// 127.0.0.1:8788): NDJSON over HTTP for the `@gantry/rome-runner`
    /// package, on the same engine. Rome's agents are the engine's, e.g.
    /// `[agents.NAME]` of the config file (model, instructions,
    /// allowed_tools, output_schema).
    #[arg(long, value_name = "HOST:PORT")]
    pub rome_addr: Option<String>,

    /// File holding the bearer token Rome runner calls must carry.
    #[arg(long, value_name = "FILE", requires = "rome_addr")]
    pub rome_token_file: Option<PathBuf>,

    /// The loosest sandbox a client of any listener may give a thread: a
    /// looser one is refused, and below `danger-full-access` no approval
    /// reruns a command outside the sandbox. Clients reach these listeners
    /// over the network; raise it only when every client is trusted.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        default_value = "workspace-write"
    )]
    pub max_sandbox: SandboxCeiling,

    /// Model rounds a turn may take before it is stopped (a small model
    /// that calls tools forever).
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub max_rounds: u32,

    /// Another host name (or `name:port`) the HTTP listeners (the HTTP API
    /// and dashboard, CodeWhale, Rome) answer to, besides their listen
    /// address and, on loopback, `localhost`: the name a proxy or another
    /// machine uses for this server. Repeat for more. Requests naming any
    /// other `Host`, or sent by a page of any other origin, are refused:
    /// a web page cannot reach these listeners through DNS rebinding.
    #[arg(long, value_name = "HOST")]
    pub allowed_host: Vec<String>,

    /// Also serve Gantry's own HTTP API (`/v1`, events over SSE,
    /// `/openapi.json`) and its web dashboard (`/`) here, on the same
    /// engine; without a value, on 127.0.0.1:4080. Loopback callers need no
    /// token until one is made with `gantry tokens create`; beyond
    /// loopback every call needs one.
    #[arg(
        long,
        value_name = "HOST:PORT",
        num_args = 0..=1,
        default_missing_value = proto_http::DEFAULT_HTTP_ADDR
    )]
    pub http_addr: Option<String>,
}

/// `gantry exec`.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// What to ask the agent.
    pub prompt: String,

    #[command(flatten)]
    pub store: StoreArg,

    /// Model id: `PROVIDER/MODEL` or a plain id with a config file, or
    /// `scripted:FILE` for a deterministic scripted model (the script format
    /// of gantry-scripted-model, served in-process: no key, no network)
    /// [default: the config's default_model, else gpt-4.1].
    #[arg(long, short, env = "GANTRY_MODEL")]
    pub model: Option<String>,

    /// Base URL of an OpenAI-compatible server (with or without the trailing /v1);
    /// bypasses the config's providers [default: https://api.openai.com/v1].
    #[arg(long, env = "GANTRY_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,

    /// Environment variable that holds the API key.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub api_key_env: String,

    #[command(flatten)]
    pub server: ServerArgs,

    /// Workspace the agent works in [default: the current directory].
    #[arg(long, short = 'C', value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Print one JSON notification per line on stdout instead of the live view.
    #[arg(long)]
    pub json: bool,

    /// Model rounds allowed before the turn is stopped.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub max_rounds: u32,

    /// Retries of a failed model request (rate limits, 5xx, unreachable server).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_retries: u32,

    /// Reasoning effort, for models that support it (others get none).
    #[arg(long, value_name = "LEVEL", value_parser = ["minimal", "low", "medium", "high"])]
    pub reasoning: Option<String>,

    /// OS sandbox for the agent's shell commands: `workspace-write` (writes
    /// only in the workspace and the temp dir, no network), `read-only`, or
    /// `danger-full-access` (no sandbox). A sandboxed mode refuses to start
    /// where the kernel cannot enforce it.
    #[arg(long, value_name = "MODE", default_value = "workspace-write",
          value_parser = ["read-only", "workspace-write", "danger-full-access"])]
    pub sandbox: String,

    /// Extra instructions for the model.
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,

    /// Continue an existing thread instead of starting a new one.
    #[arg(long, value_name = "THREAD_ID")]
    pub resume: Option<String>,

    /// Write a JSON report of the run to FILE when it ends, however it
    /// ends: its outcome (completed, failed with the reason, interrupted,
    /// budget_exceeded), usage, cost, wall time and the trajectory's path.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// Write the thread's ATIF trajectory to FILE when the turn ends.
    #[arg(long, value_name = "FILE")]
    pub trajectory: Option<PathBuf>,
}

/// `gantry threads ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ThreadsCommand {
    /// List threads, newest first.
    List(ListArgs),
    /// Show one thread with its turns and items.
    Show(ShowArgs),
    /// List a thread's checkpoints: its workspace before each turn that
    /// changed it.
    Checkpoints(ShowArgs),
    /// Put a thread's workspace back as it was at a checkpoint; the
    /// conversation continues from there in a new thread.
    Rewind(RewindArgs),
    /// Fork a thread at a checkpoint: a new workspace directory beside the
    /// source's with the checkpoint's files, and the turns before it.
    Fork(ForkArgs),
    /// Export a thread as an ATIF trajectory (Harbor's Agent Trajectory
    /// Interchange Format): every step, tool call, result and its usage.
    Export(ExportArgs),
}

/// `gantry threads export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Thread id.
    pub id: String,
    /// The export's format: `atif` (ATIF-v1.8 JSON).
    #[arg(long, value_name = "FORMAT", default_value = "atif", value_parser = ["atif"])]
    pub format: String,
    /// Write it to FILE (atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `gantry threads rewind`.
#[derive(Debug, Args)]
pub(crate) struct RewindArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Thread id.
    pub id: String,
    /// Checkpoint id (`gantry threads checkpoints ID`).
    pub checkpoint: String,
    /// Rewind even over files someone else changed since the agent's last
    /// turn (they are lost).
    #[arg(long)]
    pub force: bool,
}

/// `gantry threads fork`.
#[derive(Debug, Args)]
pub(crate) struct ForkArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Thread id.
    pub id: String,
    /// Checkpoint id (`gantry threads checkpoints ID`).
    pub checkpoint: String,
}

/// `gantry threads list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only archived threads.
    #[arg(long, conflicts_with = "all")]
    pub archived: bool,
    /// Archived and active threads.
    #[arg(long)]
    pub all: bool,
    /// Page size.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Continue from a previous page's cursor.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Print the page as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `gantry threads show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Thread id.
    pub id: String,
    /// Print the thread as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How to talk to the `--base-url` server, for local ones that differ from
/// OpenAI (llama.cpp, LM Studio, vLLM, Ollama).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ServerArgs {
    /// `tool_choice` to send with tools: `auto`, `required`, `none`, or a
    /// tool's name. Some servers ignore tools without it (llama.cpp's
    /// Python server: `auto`).
    #[arg(long, value_name = "CHOICE")]
    pub tool_choice: Option<String>,

    /// Ask for whole answers instead of streamed ones (a server that
    /// cannot stream tool calls).
    #[arg(long)]
    pub no_stream: bool,

    /// The model's context window in tokens, where the catalog does not
    /// know the model (a local one): compaction starts before it is full.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
}
