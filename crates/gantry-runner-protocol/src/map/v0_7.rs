//! 0.7.0's wire: the control plane picks thread ids and asks for
//! heartbeats; updates name their thread and turn; agents and skill
//! packages are not part of it.

use super::{Inbound, NotInVersion, unknown_or_invalid};
use crate::ProtocolVersion;
use crate::kinds::UnknownKind;
use crate::messages::{
    ClientMessage, CreateThread, ItemUpdate, Payload, Registration, Request, ServerMessage,
    TurnUpdate, UserMessage,
};
use crate::v0_7 as pb;
use crate::v0_7::client_message::Payload as WirePayload;
use crate::v0_7::server_message::Request as WireRequest;
use crate::validate::Validate;

fn absent(what: &'static str) -> NotInVersion {
    NotInVersion {
        what,
        version: ProtocolVersion::V0_7,
    }
}

/// A registration as 0.7.0 says it.
pub fn registration(registration: &Registration) -> pb::RegisterRunnerRequest {
    pb::RegisterRunnerRequest {
        agent_sdks: registration.agent_sdks.clone(),
    }
}

/// A registration off the wire, checked. 0.2.0's registration is 0.7.0's
/// without an SDK's status and error, so both read as this.
pub fn registration_from_wire(
    registration: pb::RegisterRunnerRequest,
) -> Result<Registration, Inbound> {
    registration.validate()?;
    Ok(Registration {
        agent_sdks: registration.agent_sdks,
    })
}

/// A request onto the wire (a 0.7.0 request must have an id).
pub fn server_to_wire(message: &ServerMessage) -> Result<pb::ServerMessage, NotInVersion> {
    let request = match &message.request {
        Request::CreateThread(r) => WireRequest::CreateThreadRequest(pb::CreateThreadRequest {
            thread_id: r.thread_id.clone().unwrap_or_default(),
            model: r.model.clone(),
            reasoning_level: r.reasoning_level.clone(),
            additional_model_instructions: r.additional_model_instructions.clone(),
            mcp_servers: r.mcp_servers.clone(),
            git_skill_packages: r.git_skill_packages.clone(),
            cli_secret: r.cli_secret.clone().unwrap_or_default(),
        }),
        Request::DeleteThread { thread_id, .. } => {
            WireRequest::DeleteThreadRequest(pb::DeleteThreadRequest {
                thread_id: thread_id.clone(),
            })
        }
        Request::CreateUserMessage(r) => {
            WireRequest::CreateUserMessageRequest(pb::CreateUserMessageRequest {
                thread_id: r.thread_id.clone(),
                text: r.text.clone(),
                allow_steer: r.allow_steer,
                model: r.model.clone(),
                model_reasoning_level: r.model_reasoning_level.clone(),
            })
        }
        Request::InterruptTurn { thread_id } => {
            WireRequest::InterruptTurnRequest(pb::InterruptTurnRequest {
                thread_id: thread_id.clone(),
            })
        }
        Request::Heartbeat => WireRequest::HeartbeatRequest(pb::HeartbeatRequest {}),
        Request::CodexConfiguration { auth_type } => {
            WireRequest::CodexConfigurationRequest(pb::CodexConfigurationRequest {
                auth_type: *auth_type as i32,
                codex_api_key: None,
            })
        }
        other @ (Request::CreateAgent { .. }
        | Request::DeleteAgent { .. }
        | Request::InstallSkills { .. }) => return Err(absent(other.name())),
    };
    Ok(pb::ServerMessage {
        request_id: message.request_id.clone().unwrap_or_default(),
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
        WireRequest::CreateThreadRequest(r) => Request::CreateThread(CreateThread {
            agent_id: None,
            thread_id: Some(r.thread_id),
            model: r.model,
            reasoning_level: r.reasoning_level,
            additional_model_instructions: r.additional_model_instructions,
            mcp_servers: r.mcp_servers,
            git_skill_packages: r.git_skill_packages,
            cli_secret: Some(r.cli_secret),
        }),
        WireRequest::DeleteThreadRequest(r) => Request::DeleteThread {
            agent_id: None,
            thread_id: r.thread_id,
        },
        WireRequest::CreateUserMessageRequest(r) => Request::CreateUserMessage(UserMessage {
            agent_id: None,
            thread_id: r.thread_id,
            text: r.text,
            allow_steer: r.allow_steer,
            model: r.model,
            model_reasoning_level: r.model_reasoning_level,
        }),
        WireRequest::InterruptTurnRequest(r) => Request::InterruptTurn {
            thread_id: r.thread_id,
        },
        WireRequest::HeartbeatRequest(_) => Request::Heartbeat,
        WireRequest::CodexConfigurationRequest(r) => Request::CodexConfiguration {
            auth_type: r.auth_type(),
        },
    };
    Ok(ServerMessage {
        request_id: Some(message.request_id),
        request,
    })
}

/// A reply or update onto the wire. A turn or item update must name its
/// thread and turn in 0.7.0: one that cannot is [`NotInVersion`].
pub fn client_to_wire(message: &ClientMessage) -> Result<pb::ClientMessage, NotInVersion> {
    let payload = match &message.payload {
        Payload::RequestError { error_message } => WirePayload::RequestError(pb::RequestError {
            error_message: error_message.clone(),
        }),
        Payload::Thread { thread_id, status } => WirePayload::ThreadUpdate(pb::ThreadUpdate {
            thread_id: thread_id.clone(),
            status: *status as i32,
        }),
        Payload::Turn(u) => WirePayload::TurnUpdate(pb::TurnUpdate {
            sdk_turn_id: u.sdk_turn_id.clone(),
            status: u.status as i32,
            thread_id: u
                .thread_id
                .clone()
                .ok_or_else(|| absent("turn_update without thread_id"))?,
        }),
        Payload::Item(u) => WirePayload::ItemUpdate(pb::ItemUpdate {
            sdk_item_id: u.sdk_item_id.clone(),
            status: u.status as i32,
            item_type: u.item_type as i32,
            text: u.text.clone(),
            command_execution_item: u.command_execution_item.clone(),
            thread_id: u
                .thread_id
                .clone()
                .ok_or_else(|| absent("item_update without thread_id"))?,
            sdk_turn_id: u
                .sdk_turn_id
                .clone()
                .ok_or_else(|| absent("item_update without sdk_turn_id"))?,
        }),
        Payload::ThreadName {
            thread_id,
            thread_name,
        } => WirePayload::ThreadNameUpdate(pb::ThreadNameUpdate {
            thread_id: thread_id.clone(),
            thread_name: thread_name.clone(),
        }),
        Payload::Heartbeat => WirePayload::HeartbeatResponse(pb::HeartbeatResponse {}),
        Payload::Sdk(sdk) => WirePayload::AgentSdkUpdate(sdk.clone()),
        Payload::CodexDeviceCode { device_code } => {
            WirePayload::CodexDeviceCode(pb::CodexDeviceCode {
                device_code: device_code.clone(),
            })
        }
        Payload::TokenUsage(u) => WirePayload::ThreadTokenUsageUpdate(u.clone()),
        other @ (Payload::Agent { .. } | Payload::SkillPackage { .. }) => {
            return Err(absent(other.name()));
        }
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
        WirePayload::ThreadUpdate(u) => Payload::Thread {
            status: u.status(),
            thread_id: u.thread_id,
        },
        WirePayload::TurnUpdate(u) => Payload::Turn(TurnUpdate {
            status: u.status(),
            sdk_turn_id: u.sdk_turn_id,
            thread_id: Some(u.thread_id),
        }),
        WirePayload::ItemUpdate(u) => Payload::Item(ItemUpdate {
            status: u.status(),
            item_type: u.item_type(),
            sdk_item_id: u.sdk_item_id,
            text: u.text,
            command_execution_item: u.command_execution_item,
            thread_id: Some(u.thread_id),
            sdk_turn_id: Some(u.sdk_turn_id),
        }),
        WirePayload::ThreadNameUpdate(u) => Payload::ThreadName {
            thread_id: u.thread_id,
            thread_name: u.thread_name,
        },
        WirePayload::HeartbeatResponse(_) => Payload::Heartbeat,
        WirePayload::AgentSdkUpdate(sdk) => Payload::Sdk(sdk),
        WirePayload::CodexDeviceCode(c) => Payload::CodexDeviceCode {
            device_code: c.device_code,
        },
        WirePayload::ThreadTokenUsageUpdate(u) => Payload::TokenUsage(u),
    };
    Ok(ClientMessage {
        request_id: message.request_id,
        payload,
    })
}
