//! Sessions (threads): create, destroy, list, get, configure, messages.

use std::path::PathBuf;

use gantry_core::{ContextMessage, ContextRole, CreateThread, EngineError, ThreadQuery};
use gantry_grpc::clip;
use gantry_types::{ThreadId, ThreadSettings};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{session_id, status};
use crate::views::conversation;
use crate::views::session::{config_patch, session};

/// `CreateSession`: a thread in the config's workspace (the server's when
/// empty; created when it does not exist yet, as A3S does), with the client's id if it chose one (`ALREADY_EXISTS` if taken),
/// its LLM settings, system prompt and starting conversation.
pub(crate) async fn create_session(
    ctx: &Ctx,
    req: pb::CreateSessionRequest,
) -> Result<pb::CreateSessionResponse, Status> {
    let config = req.config.unwrap_or_default();
    let cwd = match config.workspace.trim() {
        "" => ctx.workspace(),
        dir => workspace_dir(dir)?,
    };
    // The settings a new thread would get, changed by the config.
    let mut settings = ThreadSettings {
        name: None,
        model: ctx.engine.providers().default_model(),
        reasoning: None,
        instructions: None,
        endpoint: None,
        temperature: None,
        max_output_tokens: None,
        metadata: Default::default(),
        cwd: None,
    };
    config_patch(&ctx.engine, &config)?.apply_to(&mut settings);
    let (mut instructions, context) = initial_context(&req.initial_context)?;
    if let Some(prompt) = settings.instructions.take() {
        instructions.insert(0, prompt);
    }
    let id = req
        .session_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(ThreadId::from);
    let thread = ctx
        .engine
        .threads()
        .create(CreateThread {
            cwd,
            model: Some(settings.model),
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            name: settings.name,
            id,
            endpoint: settings.endpoint,
            temperature: settings.temperature,
            max_output_tokens: settings.max_output_tokens,
            metadata: settings.metadata,
            context,
            ..CreateThread::default()
        })
        .await
        .map_err(status)?;
    // The server's skills (loaded by clients) are every session's, as in A3S.
    for (name, text) in ctx.loaded_skills() {
        if let Err(e) = ctx.engine.skills().load_inline(&thread.id, &text).await {
            tracing::warn!(skill = %name, error = %e, "a loaded skill did not load into a new session");
        }
    }
    let view = ctx
        .engine
        .threads()
        .read(&thread.id)
        .await
        .map_err(status)?;
    Ok(pb::CreateSessionResponse {
        session_id: thread.id.to_string(),
        session: Some(session(&ctx.engine, &view)),
    })
}

/// A workspace a client named, created when missing (A3S creates it).
fn workspace_dir(dir: &str) -> Result<PathBuf, Status> {
    let path = PathBuf::from(dir);
    std::fs::create_dir_all(&path).map_err(|e| {
        Status::invalid_argument(format!(
            "config.workspace: cannot create {}: {e}",
            clip(dir)
        ))
    })?;
    Ok(path)
}

/// `initial_context` as extra instructions (its `system` messages) and the
/// conversation the thread starts with.
fn initial_context(messages: &[pb::Message]) -> Result<(Vec<String>, Vec<ContextMessage>), Status> {
    let mut system = Vec::new();
    let mut context = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = match m.role.trim().to_ascii_lowercase().as_str() {
            "system" => {
                system.push(m.content.clone());
                continue;
            }
            "user" => ContextRole::User,
            "assistant" => ContextRole::Assistant,
            other => {
                return Err(Status::invalid_argument(format!(
                    "initial_context[{i}].role: `{other}` is not user, assistant or system",
                    other = clip(other)
                )));
            }
        };
        context.push(ContextMessage {
            role,
            text: m.content.clone(),
        });
    }
    Ok((system, context))
}

/// `DestroySession`: interrupts what runs and archives the thread. Over
/// this service the session is gone from then on (`NOT_FOUND`, as in A3S);
/// the thread stays in the engine's store, readable by other protocols.
pub(crate) async fn destroy_session(
    ctx: &Ctx,
    req: pb::DestroySessionRequest,
) -> Result<pb::DestroySessionResponse, Status> {
    let id = session_id(&req.session_id)?;
    ctx.live_session(&id).await?;
    ctx.engine.turns().interrupt(&id).await.map_err(status)?;
    ctx.engine.threads().archive(&id).await.map_err(status)?;
    Ok(pb::DestroySessionResponse { success: true })
}

/// `ListSessions`: every session not destroyed, newest first.
pub(crate) async fn list_sessions(
    ctx: &Ctx,
    _req: pb::ListSessionsRequest,
) -> Result<pb::ListSessionsResponse, Status> {
    let mut sessions = Vec::new();
    let mut query = ThreadQuery {
        archived: Some(false),
        limit: 1000,
        cursor: None,
    };
    loop {
        let page = ctx.engine.threads().list(&query).await.map_err(status)?;
        for thread in page.threads {
            let view = match ctx.engine.threads().read(&thread.id).await {
                Ok(view) => view,
                // Destroyed or gone since the listing: not listed.
                Err(gantry_core::EngineError::ThreadNotFound(_)) => continue,
                Err(e) => return Err(status(e)),
            };
            sessions.push(session(&ctx.engine, &view));
        }
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => break,
        }
    }
    Ok(pb::ListSessionsResponse { sessions })
}

/// `GetSession`: `NOT_FOUND` for an unknown or destroyed session.
pub(crate) async fn get_session(
    ctx: &Ctx,
    req: pb::GetSessionRequest,
) -> Result<pb::GetSessionResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.live_session(&id).await?;
    Ok(pb::GetSessionResponse {
        session: Some(session(&ctx.engine, &view)),
    })
}

/// `ConfigureSession`: changes the non-empty fields of the config (name,
/// system prompt, LLM, limits, workspace) from the next model request on.
/// A new workspace is created when missing (as `CreateSession` does) and
/// is refused while a turn runs (`FAILED_PRECONDITION`), as in A3S.
pub(crate) async fn configure_session(
    ctx: &Ctx,
    req: pb::ConfigureSessionRequest,
) -> Result<pb::ConfigureSessionResponse, Status> {
    let id = session_id(&req.session_id)?;
    let config = req
        .config
        .ok_or_else(|| Status::invalid_argument("config: required"))?;
    ctx.live_session(&id).await?;
    // A patch of the fields the config sets: applied inside the thread's
    // actor, so a concurrent change of other fields is kept.
    let mut patch = config_patch(&ctx.engine, &config)?;
    let moves = match config.workspace.trim() {
        "" => false,
        dir => {
            patch.cwd = Some(workspace_dir(dir)?.to_string_lossy().into_owned());
            true
        }
    };
    match ctx.engine.threads().configure(&id, patch).await {
        Ok(_) => {}
        Err(EngineError::Busy { turn, .. }) if moves => {
            return Err(Status::failed_precondition(format!(
                "config.workspace: session {id} is running turn {turn}; its workspace can \
                 change once the turn ends (or after Cancel)"
            )));
        }
        Err(e) => return Err(status(e)),
    }
    let view = ctx.engine.threads().read(&id).await.map_err(status)?;
    Ok(pb::ConfigureSessionResponse {
        session: Some(session(&ctx.engine, &view)),
    })
}

/// `GetMessages`: the conversation from its start; `offset` skips, `limit`
/// caps (all when absent), `has_more` says whether messages follow.
pub(crate) async fn get_messages(
    ctx: &Ctx,
    req: pb::GetMessagesRequest,
) -> Result<pb::GetMessagesResponse, Status> {
    let id = session_id(&req.session_id)?;
    let view = ctx.live_session(&id).await?;
    let all = conversation::messages(&view);
    let total = all.len();
    let offset = req.offset.map_or(0, |o| o as usize).min(total);
    let limit = req.limit.map_or(total, |l| l as usize);
    let messages: Vec<_> = all.into_iter().skip(offset).take(limit).collect();
    let has_more = offset + messages.len() < total;
    Ok(pb::GetMessagesResponse {
        messages,
        total_count: crate::views::u32_of(total),
        has_more,
    })
}

/// `RestoreSession`: brings a stored session back into memory (the
/// engine loads its thread from the log, closing a turn a crash left
/// running). As in A3S, a session that cannot be restored (unknown,
/// destroyed) is `success: false` with the reason in `message`.
pub(crate) async fn restore_session(
    ctx: &Ctx,
    req: pb::RestoreSessionRequest,
) -> Result<pb::RestoreSessionResponse, Status> {
    let id = session_id(&req.session_id)?;
    let (success, message) = match ctx.live_session(&id).await {
        Ok(view) => (
            true,
            format!(
                "Session restored: {} turns, {} events",
                view.turns.len(),
                view.thread.last_seq
            ),
        ),
        Err(e) if e.code() == tonic::Code::NotFound => {
            (false, format!("Failed to restore session: {}", e.message()))
        }
        Err(e) => return Err(e),
    };
    Ok(pb::RestoreSessionResponse {
        success,
        session_id: id.to_string(),
        message,
    })
}
