//! The kinds of message each version's oneofs hold, by field number, so a
//! message of a kind the version being spoken does not know can still be
//! named: prost skips a field it does not know, and a peer speaking another
//! version (a 0.7.0 control plane asking a 0.2.0 runner for heartbeats)
//! deserves a log line that says what it sent, not a number.
//!
//! Both versions number their oneofs alike where they share a kind, so one
//! table per message serves both.

use std::fmt;

use crate::ProtocolVersion::{self, V0_2, V0_7};

/// `ServerMessage.request`'s kinds: field, name, the versions that have it.
const SERVER: &[(u32, &str, &[ProtocolVersion])] = &[
    (2, "create_agent_request", &[V0_2]),
    (3, "delete_agent_request", &[V0_2]),
    (4, "create_thread_request", &[V0_2, V0_7]),
    (5, "delete_thread_request", &[V0_2, V0_7]),
    (6, "create_user_message_request", &[V0_2, V0_7]),
    (7, "install_skills_mp_request", &[V0_2]),
    (8, "interrupt_turn_request", &[V0_7]),
    (9, "heartbeat_request", &[V0_7]),
    (10, "codex_configuration_request", &[V0_7]),
];

/// `ClientMessage.payload`'s kinds.
const CLIENT: &[(u32, &str, &[ProtocolVersion])] = &[
    (2, "request_error", &[V0_2, V0_7]),
    (3, "agent_update", &[V0_2]),
    (4, "thread_update", &[V0_2, V0_7]),
    (5, "turn_update", &[V0_2, V0_7]),
    (6, "item_update", &[V0_2, V0_7]),
    (7, "skill_mp_update", &[V0_2]),
    (8, "thread_name_update", &[V0_7]),
    (9, "heartbeat_response", &[V0_7]),
    (10, "agent_sdk_update", &[V0_7]),
    (11, "codex_device_code", &[V0_7]),
    (12, "thread_token_usage_update", &[V0_7]),
];

/// Which message's oneof a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// A control plane's `ServerMessage` (a request).
    Server,
    /// A runner's `ClientMessage` (a reply or update).
    Client,
}

/// A kind of message the version spoken does not know, as far as it can be
/// told: its field number (when the bytes were seen) and its name in the
/// version that has it (when one Gantry knows does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownKind {
    /// The oneof's field number; `None` when the oneof was empty.
    pub field: Option<u32>,
    /// Its name, e.g. `heartbeat_request`.
    pub name: Option<&'static str>,
    /// The version that has it (the newest, if both do).
    pub version: Option<ProtocolVersion>,
}

impl UnknownKind {
    /// Nothing known: an empty oneof, or a message never seen as bytes.
    pub const UNSEEN: UnknownKind = UnknownKind {
        field: None,
        name: None,
        version: None,
    };

    /// The kind at `field` of `side`'s oneof.
    pub fn of(side: Side, field: Option<u32>) -> Self {
        let table = match side {
            Side::Server => SERVER,
            Side::Client => CLIENT,
        };
        let known = field.and_then(|f| table.iter().find(|(n, ..)| *n == f));
        UnknownKind {
            field,
            name: known.map(|(_, name, _)| *name),
            version: known.and_then(|(.., versions)| versions.last().copied()),
        }
    }

    /// Its name, or `unknown` for one no version Gantry knows has.
    pub fn name_or_unknown(&self) -> &'static str {
        self.name.unwrap_or("unknown")
    }
}

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.field, self.name, self.version) {
            (Some(field), Some(name), Some(version)) => {
                write!(f, "{name} (field {field}, a kind of {version})")
            }
            (Some(field), ..) => write!(f, "field {field}, a kind of no version Gantry knows"),
            (None, ..) => f.write_str("a message of no kind (its oneof is empty)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::map;
    use crate::messages::{ClientMessage, Payload, Request, ServerMessage, TurnStatus, TurnUpdate};

    /// The field number a message's oneof was encoded under.
    fn field_of(bytes: &[u8]) -> u32 {
        crate::version::oneof_field(bytes).expect("a oneof field")
    }

    fn requests() -> Vec<Request> {
        use crate::messages::{CodexAuthType, CreateThread, UserMessage};
        vec![
            Request::CreateAgent {
                agent_id: "a".into(),
                agent_sdk: "s".into(),
            },
            Request::DeleteAgent {
                agent_id: "a".into(),
            },
            Request::CreateThread(CreateThread {
                agent_id: Some("a".into()),
                thread_id: Some("t".into()),
                model: "m".into(),
                ..CreateThread::default()
            }),
            Request::DeleteThread {
                agent_id: Some("a".into()),
                thread_id: "t".into(),
            },
            Request::CreateUserMessage(UserMessage {
                thread_id: "t".into(),
                text: "x".into(),
                ..UserMessage::default()
            }),
            Request::InstallSkills {
                agent_id: "a".into(),
                package_name: "p".into(),
            },
            Request::InterruptTurn {
                thread_id: "t".into(),
            },
            Request::Heartbeat,
            Request::CodexConfiguration {
                auth_type: CodexAuthType::ApiKey,
            },
        ]
    }

    // The tables are written by hand: every request either version can
    // carry must be named as `Request::name` names it.
    #[test]
    fn every_request_of_either_version_is_named_by_its_field() {
        let mut named = 0;
        for request in requests() {
            let message = ServerMessage {
                request_id: Some("r".into()),
                request: request.clone(),
            };
            for version in ProtocolVersion::ALL {
                let bytes = match version {
                    V0_2 => map::v0_2::server_to_wire(&message).map(|m| m.encode_to_vec()),
                    V0_7 => map::v0_7::server_to_wire(&message).map(|m| m.encode_to_vec()),
                };
                let Ok(bytes) = bytes else { continue };
                let kind = UnknownKind::of(Side::Server, Some(field_of(&bytes)));
                assert_eq!(kind.name, Some(request.name()), "{version}");
                named += 1;
            }
        }
        assert_eq!(named, 12, "six requests in 0.2, six in 0.7 (three shared)");
    }

    #[test]
    fn every_payload_of_either_version_is_named_by_its_field() {
        use crate::messages::{AgentStatus, SkillMpStatus, ThreadStatus};
        let payloads = vec![
            Payload::RequestError {
                error_message: "e".into(),
            },
            Payload::Agent {
                agent_id: "a".into(),
                status: AgentStatus::Ready,
            },
            Payload::Thread {
                thread_id: "t".into(),
                status: ThreadStatus::Ready,
            },
            Payload::Turn(TurnUpdate {
                sdk_turn_id: "u".into(),
                status: TurnStatus::Running,
                thread_id: Some("t".into()),
            }),
            Payload::Item(crate::messages::ItemUpdate {
                sdk_item_id: "i".into(),
                status: crate::messages::ItemStatus::Running,
                item_type: crate::messages::ItemType::AgentMessage,
                text: None,
                command_execution_item: None,
                thread_id: Some("t".into()),
                sdk_turn_id: Some("u".into()),
            }),
            Payload::SkillPackage {
                agent_id: "a".into(),
                package_name: "p".into(),
                status: SkillMpStatus::Installed,
            },
            Payload::ThreadName {
                thread_id: "t".into(),
                thread_name: None,
            },
            Payload::Heartbeat,
            Payload::Sdk(Default::default()),
            Payload::CodexDeviceCode {
                device_code: "c".into(),
            },
            Payload::TokenUsage(Default::default()),
        ];
        for payload in payloads {
            let message = ClientMessage {
                request_id: None,
                payload: payload.clone(),
            };
            for version in ProtocolVersion::ALL {
                let Ok(bytes) = version.encode_client(&message) else {
                    continue;
                };
                let kind = UnknownKind::of(Side::Client, Some(field_of(&bytes)));
                assert_eq!(kind.name, Some(payload.name()), "{version}");
            }
        }
    }

    #[test]
    fn an_unknown_kind_says_its_name_field_and_version() {
        let heartbeat = UnknownKind::of(Side::Server, Some(9));
        assert_eq!(
            heartbeat.to_string(),
            "heartbeat_request (field 9, a kind of 0.7)"
        );
        let odd = UnknownKind::of(Side::Client, Some(42));
        assert_eq!(odd.name_or_unknown(), "unknown");
        assert_eq!(
            odd.to_string(),
            "field 42, a kind of no version Gantry knows"
        );
    }
}
