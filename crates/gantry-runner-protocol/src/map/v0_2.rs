//! 0.2.0's wire: agents and skill packages exist, thread ids are the
//! runner's to choose, updates carry no thread; heartbeats, interrupts,
//! thread names, SDK status and token usage do not exist.

use super::{Inbound, NotInVersion, unknown_or_invalid};
use crate::ProtocolVersion;
use crate::kinds::UnknownKind;
use crate::messages::{
    ClientMessage, CreateThread, ItemType, ItemUpdate, Payload, Registration, Request,
    ServerMessage, TurnUpdate, UserMessage,
};
use crate::v0_2 as pb;
use crate::v0_2::client_message::Payload as WirePayload;
use crate::v0_2::server_message::Request as WireRequest;
use crate::validate::Validate;

fn absent(what: &'static str) -> NotInVersion {
    NotInVersion {
        what,
        version: ProtocolVersion::V0_2,
    }
}

/// A registration as 0.2.0 says it (SDK status and errors left out).
pub fn registration(registration: &Registration) -> pb::RegisterRunnerRequest {
    pb::RegisterRunnerRequest {
        agent_sdks: registration
            .agent_sdks
            .iter()
            .map(|sdk| pb::AgentSdk {
                name: sdk.name.clone(),
                models: sdk
                    .models
                    .iter()
                    .map(|m| pb::LlmModel {
                        name: m.name.clone(),
                        reasoning: m.reasoning.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// A request onto the wire.
pub fn server_to_wire(message: &ServerMessage) -> Result<pb::ServerMessage, NotInVersion> {
    let request = match &message.request {
        Request::CreateAgent {
            agent_id,
            agent_sdk,
        } => WireRequest::CreateAgentRequest(pb::CreateAgentRequest {
            agent_id: agent_id.clone(),
            agent_sdk: agent_sdk.clone(),
        }),
        Request::DeleteAgent { agent_id } => {
            WireRequest::DeleteAgentRequest(pb::DeleteAgentRequest {
                agent_id: agent_id.clone(),
            })
        }
        Request::CreateThread(r) => WireRequest::CreateThreadRequest(pb::CreateThreadRequest {
            agent_id: r.agent_id.clone().unwrap_or_default(),
            model: r.model.clone(),
            reasoning_level: r.reasoning_level.clone(),
        }),
        Request::DeleteThread {
            agent_id,
            thread_id,
        } => WireRequest::DeleteThreadRequest(pb::DeleteThreadRequest {
            agent_id: agent_id.clone().unwrap_or_default(),
            thread_id: thread_id.clone(),
        }),
        Request::CreateUserMessage(r) => {
            WireRequest::CreateUserMessageRequest(pb::CreateUserMessageRequest {
                agent_id: r.agent_id.clone().unwrap_or_default(),
                thread_id: r.thread_id.clone(),
                text: r.text.clone(),
                allow_steer: r.allow_steer,
                model: r.model.clone(),
                model_reasoning_level: r.model_reasoning_level.clone(),
            })
        }
        Request::InstallSkills {
            agent_id,
            package_name,
        } => WireRequest::InstallSkillsMpRequest(pb::InstallSkillsMpRequest {
            agent_id: agent_id.clone(),
            package_name: package_name.clone(),
        }),
        other @ (Request::InterruptTurn { .. }
        | Request::Heartbeat
        | Request::CodexConfiguration { .. }) => return Err(absent(other.name())),
    };
    Ok(pb::ServerMessage {
        request_id: message.request_id.clone(),
        request: Some(request),
    })
}

/// A request off the wire, checked.
pub fn server_from_wire(message: pb::ServerMessage) -> Result<ServerMessage, Inbound> {
    message.validate().map_err(unknown_or_invalid)?;
    let Some(request) = message.request else {
        return Err(Inbound::Unknown(UnknownKind::UNSEEN));
    };
    let request = match request {
        WireRequest::CreateAgentRequest(r) => Request::CreateAgent {
            agent_id: r.agent_id,
            agent_sdk: r.agent_sdk,
        },
        WireRequest::DeleteAgentRequest(r) => Request::DeleteAgent {
            agent_id: r.agent_id,
        },
        WireRequest::CreateThreadRequest(r) => Request::CreateThread(CreateThread {
            agent_id: Some(r.agent_id),
            model: r.model,
            reasoning_level: r.reasoning_level,
            ..CreateThread::default()
        }),
        WireRequest::DeleteThreadRequest(r) => Request::DeleteThread {
            agent_id: Some(r.agent_id),
            thread_id: r.thread_id,
        },
        WireRequest::CreateUserMessageRequest(r) => Request::CreateUserMessage(UserMessage {
            agent_id: Some(r.agent_id),
            thread_id: r.thread_id,
            text: r.text,
            allow_steer: r.allow_steer,
            model: r.model,
            model_reasoning_level: r.model_reasoning_level,
        }),
        WireRequest::InstallSkillsMpRequest(r) => Request::InstallSkills {
            agent_id: r.agent_id,
            package_name: r.package_name,
        },
    };
    Ok(ServerMessage {
        request_id: message.request_id,
        request,
    })
}

/// A reply or update onto the wire. Item types 0.2.0 lacks go as unknown
/// (their text says what they are).
pub fn client_to_wire(message: &ClientMessage) -> Result<pb::ClientMessage, NotInVersion> {
    let payload = match &message.payload {
        Payload::RequestError { error_message } => WirePayload::RequestError(pb::RequestError {
            error_message: error_message.clone(),
        }),
        Payload::Agent { agent_id, status } => WirePayload::AgentUpdate(pb::AgentUpdate {
            agent_id: agent_id.clone(),
            status: *status as i32,
        }),
        Payload::Thread { thread_id, status } => WirePayload::ThreadUpdate(pb::ThreadUpdate {
            thread_id: thread_id.clone(),
            status: *status as i32,
        }),
        Payload::Turn(u) => WirePayload::TurnUpdate(pb::TurnUpdate {
            sdk_turn_id: u.sdk_turn_id.clone(),
            status: u.status as i32,
        }),
        Payload::Item(u) => {
            let item_type = if (u.item_type as i32) <= ItemType::CommandExecution as i32 {
                u.item_type as i32
            } else {
                ItemType::Unknown as i32
            };
            WirePayload::ItemUpdate(pb::ItemUpdate {
                sdk_item_id: u.sdk_item_id.clone(),
                status: u.status as i32,
                item_type,
                text: u.text.clone(),
                command_execution_item: u.command_execution_item.as_ref().map(|c| {
                    pb::CommandExecutionItem {
                        command: c.command.clone(),
                        cwd: c.cwd.clone(),
                        process_id: c.process_id.clone(),
                        output: c.output.clone(),
                    }
                }),
            })
        }
        Payload::SkillPackage {
            agent_id,
            package_name,
            status,
        } => WirePayload::SkillMpUpdate(pb::SkillMpUpdate {
            agent_id: agent_id.clone(),
            status: *status as i32,
            package_name: package_name.clone(),
        }),
        other @ (Payload::ThreadName { .. }
        | Payload::Heartbeat
        | Payload::Sdk(_)
        | Payload::CodexDeviceCode { .. }
        | Payload::TokenUsage(_)) => return Err(absent(other.name())),
    };
    Ok(pb::ClientMessage {
        request_id: message.request_id.clone(),
        payload: Some(payload),
    })
}

/// A reply or update off the wire, checked.
pub fn client_from_wire(message: pb::ClientMessage) -> Result<ClientMessage, Inbound> {
    message.validate().map_err(unknown_or_invalid)?;
    let Some(payload) = message.payload else {
        return Err(Inbound::Unknown(UnknownKind::UNSEEN));
    };
    let payload = match payload {
        WirePayload::RequestError(e) => Payload::RequestError {
            error_message: e.error_message,
        },
        WirePayload::AgentUpdate(u) => Payload::Agent {
            status: u.status(),
            agent_id: u.agent_id,
        },
        WirePayload::ThreadUpdate(u) => Payload::Thread {
            status: crate::messages::ThreadStatus::try_from(u.status).unwrap_or_default(),
            thread_id: u.thread_id,
        },
        WirePayload::TurnUpdate(u) => Payload::Turn(TurnUpdate {
            status: crate::messages::TurnStatus::try_from(u.status).unwrap_or_default(),
            sdk_turn_id: u.sdk_turn_id,
            thread_id: None,
        }),
        WirePayload::ItemUpdate(u) => Payload::Item(ItemUpdate {
            status: crate::messages::ItemStatus::try_from(u.status).unwrap_or_default(),
            // 0.2.0's types are 0.7.0's first five.
            item_type: ItemType::try_from(u.item_type).unwrap_or_default(),
            sdk_item_id: u.sdk_item_id,
            text: u.text,
            command_execution_item: u.command_execution_item.map(|c| {
                crate::messages::CommandExecutionItem {
                    command: c.command,
                    cwd: c.cwd,
                    process_id: c.process_id,
                    output: c.output,
                }
            }),
            thread_id: None,
            sdk_turn_id: None,
        }),
        WirePayload::SkillMpUpdate(u) => Payload::SkillPackage {
            status: u.status(),
            agent_id: u.agent_id,
            package_name: u.package_name,
        },
    };
    Ok(ClientMessage {
        request_id: message.request_id,
        payload,
    })
}
