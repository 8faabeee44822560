//! The agent's memory: a session stores, recalls, searches, counts and
//! clears memories (its own, plus its agent's shared ones when it runs
//! under an agent). The proto's classes are the engine's: long-term =
//! semantic + procedural, short-term = episodic, working = working.

use gantry_core::EngineError;
use gantry_types::memory::{
    MemoryClear, MemoryId, MemoryItem, MemoryQuery, MemorySummaryRequest, MemoryType, NewMemory,
};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::{required, session_id, status};

/// `StoreMemory`: stores the memory in the session's own memory. An empty
/// id gets a fresh one (a used id replaces that memory, keeping its access
/// count); a zero timestamp means now; an unset type is semantic. Access
/// count and last access are the engine's and ignored here.
pub(crate) async fn store_memory(
    ctx: &Ctx,
    req: pb::StoreMemoryRequest,
) -> Result<pb::StoreMemoryResponse, Status> {
    let id = session_id(&req.session_id)?;
    let memory = req
        .memory
        .ok_or_else(|| Status::invalid_argument("memory: required"))?;
    let new = new_memory(memory)?;
    let stored = ctx
        .engine
        .memory()
        .store(&id, new)
        .await
        .map_err(|e| field_error("memory", e))?;
    Ok(pb::StoreMemoryResponse {
        success: true,
        memory_id: stored.id.to_string(),
    })
}

/// `RetrieveMemory`: the memory with that id, its access counted; no
/// memory (not an error) when the session sees none with that id.
pub(crate) async fn retrieve_memory(
    ctx: &Ctx,
    req: pb::RetrieveMemoryRequest,
) -> Result<pb::RetrieveMemoryResponse, Status> {
    let id = session_id(&req.session_id)?;
    let memory_id = MemoryId::from(required("memory_id", &req.memory_id)?);
    let memory = match ctx.engine.memory().retrieve(&id, &memory_id).await {
        Ok(memory) => Some(item(memory)),
        // The proto's answer for an unknown id is an empty response.
        Err(EngineError::NotFound { what: "memory", .. }) => None,
        Err(e) => return Err(status(e)),
    };
    Ok(pb::RetrieveMemoryResponse { memory })
}

/// `SearchMemories`: query text ranked by relevance (without it, by
/// importance then newest), narrowed by tags (all of them), minimum
/// importance and `recent_only` (stored in the last 24 hours); `limit` 0
/// means the engine's default (10), at most 100. `total_count` counts
/// every match before the limit.
pub(crate) async fn search_memories(
    ctx: &Ctx,
    req: pb::SearchMemoriesRequest,
) -> Result<pb::SearchMemoriesResponse, Status> {
    let id = session_id(&req.session_id)?;
    if let Some(min) = req.min_importance {
        importance("min_importance", min)?;
    }
    let query = MemoryQuery {
        query: req.query,
        tags: req.tags,
        limit: req.limit,
        recent_only: req.recent_only,
        min_importance: req.min_importance,
    };
    let found = ctx
        .engine
        .memory()
        .search(&id, query)
        .await
        .map_err(status)?;
    Ok(pb::SearchMemoriesResponse {
        memories: found.memories.into_iter().map(item).collect(),
        total_count: crate::views::u32_of(found.total_count),
    })
}

/// `GetMemoryStats`: how many memories the session sees, by class.
pub(crate) async fn get_memory_stats(
    ctx: &Ctx,
    req: pb::GetMemoryStatsRequest,
) -> Result<pb::GetMemoryStatsResponse, Status> {
    let id = session_id(&req.session_id)?;
    let stats = ctx.engine.memory().stats(&id).await.map_err(status)?;
    Ok(pb::GetMemoryStatsResponse {
        stats: Some(pb::MemoryStats {
            long_term_count: stats.long_term_count,
            short_term_count: stats.short_term_count,
            working_count: stats.working_count,
        }),
    })
}

/// `ClearMemories`: deletes the session's own memories of the selected
/// classes (an agent's shared memories are left alone: they belong to
/// every session of the agent). Nothing selected clears nothing.
pub(crate) async fn clear_memories(
    ctx: &Ctx,
    req: pb::ClearMemoriesRequest,
) -> Result<pb::ClearMemoriesResponse, Status> {
    let id = session_id(&req.session_id)?;
    let clear = MemoryClear {
        long_term: req.clear_long_term,
        short_term: req.clear_short_term,
        working: req.clear_working,
        include_shared: false,
    };
    let cleared_count = ctx
        .engine
        .memory()
        .clear(&id, clear)
        .await
        .map_err(status)?;
    Ok(pb::ClearMemoriesResponse {
        success: true,
        cleared_count,
    })
}

/// A `MemoryItem` to store, checked field by field so errors name them.
fn new_memory(memory: pb::MemoryItem) -> Result<NewMemory, Status> {
    required("memory.content", &memory.content)?;
    let id = memory.id.trim();
    Ok(NewMemory {
        id: (!id.is_empty()).then(|| MemoryId::from(id)),
        timestamp: (memory.timestamp != 0).then_some(memory.timestamp),
        importance: importance("memory.importance", memory.importance)?,
        memory_type: memory_type(memory.memory_type)?,
        content: memory.content,
        tags: memory.tags,
        metadata: memory.metadata.into_iter().collect(),
        shared: false,
    })
}

/// An importance from 0 to 1.
fn importance(field: &str, value: f32) -> Result<f32, Status> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(Status::invalid_argument(format!(
            "{field}: must be between 0 and 1, got {value}"
        )))
    }
}

/// The proto's `MemoryType`; unset (`MEMORY_TYPE_UNKNOWN`) is semantic,
/// the engine's default.
fn memory_type(value: i32) -> Result<MemoryType, Status> {
    match pb::MemoryType::try_from(value) {
        Ok(pb::MemoryType::Unknown | pb::MemoryType::Semantic) => Ok(MemoryType::Semantic),
        Ok(pb::MemoryType::Episodic) => Ok(MemoryType::Episodic),
        Ok(pb::MemoryType::Procedural) => Ok(MemoryType::Procedural),
        Ok(pb::MemoryType::Working) => Ok(MemoryType::Working),
        Err(_) => Err(Status::invalid_argument(format!(
            "memory.memory_type: unknown value {value}"
        ))),
    }
}

/// A stored memory as the proto's `MemoryItem`.
fn item(memory: MemoryItem) -> pb::MemoryItem {
    let memory_type = match memory.memory_type {
        MemoryType::Episodic => pb::MemoryType::Episodic,
        MemoryType::Semantic => pb::MemoryType::Semantic,
        MemoryType::Procedural => pb::MemoryType::Procedural,
        MemoryType::Working => pb::MemoryType::Working,
    };
    pb::MemoryItem {
        id: memory.id.to_string(),
        content: memory.content,
        timestamp: memory.timestamp,
        importance: memory.importance,
        tags: memory.tags,
        memory_type: memory_type.into(),
        metadata: memory.metadata.into_iter().collect(),
        access_count: memory.access_count,
        last_accessed: memory.last_accessed,
    }
}

/// An engine error, with bad input attributed to `field` (the engine's
/// message says which part of it is wrong: the id, a tag...).
fn field_error(field: &str, error: EngineError) -> Status {
    match error {
        EngineError::InvalidInput(message) => {
            Status::invalid_argument(format!("{field}: {message}"))
        }
        e => status(e),
    }
}

/// `DeleteMemory` (newer A3S): deletes one memory the session sees by
/// its id. An id it does not see is `success: false` (A3S answers with the
/// flag, not a status).
pub(crate) async fn delete_memory(
    ctx: &Ctx,
    req: pb::DeleteMemoryRequest,
) -> Result<pb::DeleteMemoryResponse, Status> {
    let id = session_id(&req.session_id)?;
    let memory_id = MemoryId::from(required("memory_id", &req.memory_id)?);
    let success = match ctx.engine.memory().delete(&id, &memory_id).await {
        Ok(()) => true,
        Err(EngineError::NotFound { what: "memory", .. }) => false,
        Err(e) => return Err(status(e)),
    };
    Ok(pb::DeleteMemoryResponse { success })
}

/// `SummarizeMemories` (newer A3S): the session's model summarizes the
/// memories it sees (tagged with every tag asked, stored in the last
/// `recent_hours`, at most `limit`, 50 by default) in a request apart
/// from the conversation; the summary is stored as a semantic memory
/// tagged `summary`, as A3S does. Nothing to summarize is A3S's answer
/// with `memory_count` 0 and nothing stored.
pub(crate) async fn summarize_memories(
    ctx: &Ctx,
    req: pb::SummarizeMemoriesRequest,
) -> Result<pb::SummarizeMemoriesResponse, Status> {
    let id = session_id(&req.session_id)?;
    let request = MemorySummaryRequest {
        tags: req.tags,
        limit: req.limit,
        recent_hours: req.recent_hours,
    };
    let summary = ctx
        .engine
        .memory()
        .summarize(&id, request)
        .await
        .map_err(|e| field_error("tags", e))?;
    Ok(pb::SummarizeMemoriesResponse {
        summary: summary.summary,
        memory_count: summary.memory_count,
        stored: summary.stored.is_some(),
        summary_memory_id: summary.stored.map(|m| m.id.to_string()).unwrap_or_default(),
    })
}
