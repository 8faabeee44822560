//! `initialize`, `session/new`, `session/load` and `session/list`.

use std::path::Path;

use gantry_core::{CreateThread, ThreadQuery};
use gantry_types::{ThreadId, ThreadPolicy};

use super::{Agent, config, elicit, engine_error, mcp, modes::Mode};
use crate::rpc::RpcError;
use crate::updates::replay;
use crate::wire::{
    AgentCapabilities, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PROTOCOL_VERSION, PromptCapabilities,
    SessionCapabilities, SessionInfo, SessionNotification,
};

/// The id of the one authentication method (see `initialize`).
pub(crate) const AUTH_METHOD: &str = "gantry-providers";

/// Sessions a `session/list` page holds.
const LIST_PAGE: usize = 50;

pub(crate) fn initialize(agent: &Agent, req: InitializeRequest) -> InitializeResponse {
    *agent.caps.lock().unwrap_or_else(|p| p.into_inner()) = req.client_capabilities;
    InitializeResponse {
        // Version 1 whatever the client asks: the only one Gantry speaks,
        // and a client that cannot speak it disconnects.
        protocol_version: PROTOCOL_VERSION,
        agent_capabilities: AgentCapabilities {
            load_session: true,
            prompt_capabilities: PromptCapabilities {
                // The engine sends images to models that read them and
                // refuses them, saying why, for a model that reads none.
                image: true,
                audio: false,
                embedded_context: true,
            },
            mcp_capabilities: McpCapabilities {
                http: true,
                sse: false,
            },
            session_capabilities: SessionCapabilities {
                list: serde_json::json!({}),
            },
        },
        // One method of type `agent` (the schema's default type), which
        // `authenticate` accepts at once: the ACP registry lists only
        // agents that name one, and Gantry authenticates with the
        // providers it is configured with (or the vendors' key variables).
        auth_methods: vec![serde_json::json!({
            "id": AUTH_METHOD,
            "name": "Gantry's configured providers",
            "description": "Keys come from Gantry's config file or the environment \
                (ANTHROPIC_API_KEY, OPENAI_API_KEY); nothing to enter",
        })],
        agent_info: Implementation {
            name: "gantry".to_owned(),
            title: "Gantry".to_owned(),
            version: agent.options.version.clone(),
        },
    }
}

pub(crate) async fn new_session(
    agent: &Agent,
    req: NewSessionRequest,
) -> Result<NewSessionResponse, RpcError> {
    let cwd = Path::new(&req.cwd);
    if !cwd.is_absolute() || !cwd.is_dir() {
        return Err(RpcError::invalid_params(format!(
            "cwd `{}` is not an absolute path to an existing directory",
            req.cwd
        )));
    }
    let mode = Mode::Ask;
    let mut policy = mode.policy(&ThreadPolicy::default(), agent.options.sandbox);
    policy.user_input = elicit::user_input_policy(&agent.caps());
    let thread = agent
        .engine
        .threads()
        .create(CreateThread {
            cwd: cwd.to_path_buf(),
            reasoning: agent.options.reasoning.clone(),
            policy,
            metadata: [("client".to_owned(), "acp".to_owned())].into(),
            ..CreateThread::default()
        })
        .await
        .map_err(engine_error)?;
    mcp::connect(&agent.engine, &thread.id, &req.mcp_servers).await?;
    agent.open(thread.id.clone(), thread.cwd.clone(), mode);
    Ok(NewSessionResponse {
        session_id: thread.id.0.clone(),
        modes: mode.state(),
        config_options: config::options(&agent.engine, &thread),
    })
}

/// Streams the session's history, then answers.
pub(crate) async fn load_session(
    agent: &Agent,
    req: LoadSessionRequest,
) -> Result<LoadSessionResponse, RpcError> {
    let id = ThreadId(req.session_id.clone());
    let view = match agent.engine.threads().read(&id).await {
        Ok(view) => view,
        Err(gantry_core::EngineError::ThreadNotFound(_)) => {
            return Err(RpcError::unknown_session(&req.session_id));
        }
        Err(e) => return Err(engine_error(e)),
    };
    mcp::connect(&agent.engine, &id, &req.mcp_servers).await?;
    // This client is the one who can answer questions now.
    let questions = elicit::user_input_policy(&agent.caps());
    if view.thread.policy.user_input != questions {
        let mut policy = view.thread.policy.clone();
        policy.user_input = questions;
        agent
            .engine
            .safety()
            .set_policy(&id, policy)
            .await
            .map_err(engine_error)?;
    }
    let mode = Mode::of(&view.thread.policy);
    agent.open(id.clone(), view.thread.cwd.clone(), mode);
    for update in replay(&view) {
        let note = SessionNotification {
            session_id: req.session_id.clone(),
            update,
        };
        agent.peer.notify("session/update", note).await;
    }
    Ok(LoadSessionResponse {
        modes: mode.state(),
        config_options: config::options(&agent.engine, &view.thread),
    })
}

pub(crate) async fn list_sessions(
    agent: &Agent,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, RpcError> {
    let query = ThreadQuery {
        archived: Some(false),
        limit: LIST_PAGE,
        cursor: req.cursor.clone(),
    };
    let page = agent
        .engine
        .threads()
        .list(&query)
        .await
        .map_err(|e| match e {
            gantry_core::EngineError::Store(s) => RpcError::invalid_params(s.to_string()),
            e => engine_error(e),
        })?;
    let sessions = page
        .threads
        .into_iter()
        .filter(|t| req.cwd.as_deref().is_none_or(|cwd| cwd == t.cwd))
        .map(|t| SessionInfo {
            title: t
                .name
                .clone()
                .or_else(|| (!t.preview.is_empty()).then(|| t.preview.clone())),
            session_id: t.id.0,
            cwd: t.cwd,
            updated_at: gantry_types::time::iso8601(t.updated_at),
        })
        .collect();
    Ok(ListSessionsResponse {
        sessions,
        next_cursor: page.next_cursor,
    })
}
