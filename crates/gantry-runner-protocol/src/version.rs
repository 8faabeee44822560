//! Which version of `companyhelm.runner.v1` a peer speaks, and the
//! messages of either version to and from protobuf bytes (for a server
//! that learns the version per connection, after the call is routed).

use std::fmt;
use std::str::FromStr;

use prost::Message;

use crate::kinds::{Side, UnknownKind};
use crate::map::{self, Inbound, NotInVersion};
use crate::messages::{ClientMessage, Registration, ServerMessage};

/// A version of the protocol Gantry speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ProtocolVersion {
    /// 0.2.0, the seed's contract (Gantry's runner by default).
    #[default]
    V0_2,
    /// 0.7.0, what CompanyHelm ships today (0.5.13 and later are the same
    /// on the wire for what Gantry uses).
    V0_7,
}

impl ProtocolVersion {
    /// Both, oldest first.
    pub const ALL: [ProtocolVersion; 2] = [ProtocolVersion::V0_2, ProtocolVersion::V0_7];

    /// The version's short name (`0.2`, `0.7`), as flags and the API take it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V0_2 => "0.2",
            ProtocolVersion::V0_7 => "0.7",
        }
    }

    /// The version a registration comes from: 0.7 when any SDK says its
    /// status or an error (fields 0.2.0 does not have), else 0.2. A 0.7.0
    /// runner always sends a status with each SDK (CompanyHelm's runner
    /// does: ready, unconfigured or error); one that registers no SDK at
    /// all reads as 0.2 (it gets no work either way) unless pinned.
    pub fn detect(registration: &Registration) -> ProtocolVersion {
        let says_status = registration
            .agent_sdks
            .iter()
            .any(|sdk| sdk.status != 0 || sdk.error_message.is_some());
        if says_status {
            ProtocolVersion::V0_7
        } else {
            ProtocolVersion::V0_2
        }
    }

    /// A request, encoded for this version.
    pub fn encode_server(self, message: &ServerMessage) -> Result<Vec<u8>, NotInVersion> {
        Ok(match self {
            ProtocolVersion::V0_2 => map::v0_2::server_to_wire(message)?.encode_to_vec(),
            ProtocolVersion::V0_7 => map::v0_7::server_to_wire(message)?.encode_to_vec(),
        })
    }

    /// A runner's message in this version, decoded and checked. An
    /// unknown kind is [`Inbound::Unknown`], named by its field number.
    pub fn decode_client(self, bytes: &[u8]) -> Result<ClientMessage, Inbound> {
        let decoded = match self {
            ProtocolVersion::V0_2 => crate::v0_2::ClientMessage::decode(bytes)
                .map_err(|e| Inbound::Malformed(e.to_string()))
                .and_then(map::v0_2::client_from_wire),
            ProtocolVersion::V0_7 => crate::v0_7::ClientMessage::decode(bytes)
                .map_err(|e| Inbound::Malformed(e.to_string()))
                .and_then(map::v0_7::client_from_wire),
        };
        decoded.map_err(|e| named(e, Side::Client, bytes))
    }

    /// A reply or update, encoded for this version.
    pub fn encode_client(self, message: &ClientMessage) -> Result<Vec<u8>, NotInVersion> {
        Ok(match self {
            ProtocolVersion::V0_2 => map::v0_2::client_to_wire(message)?.encode_to_vec(),
            ProtocolVersion::V0_7 => map::v0_7::client_to_wire(message)?.encode_to_vec(),
        })
    }

    /// A control plane's request in this version, decoded and checked. An
    /// unknown kind is [`Inbound::Unknown`], named by its field number (a
    /// 0.7.0 heartbeat reaching a 0.2.0 runner is `heartbeat_request`).
    pub fn decode_server(self, bytes: &[u8]) -> Result<ServerMessage, Inbound> {
        let decoded = match self {
            ProtocolVersion::V0_2 => crate::v0_2::ServerMessage::decode(bytes)
                .map_err(|e| Inbound::Malformed(e.to_string()))
                .and_then(map::v0_2::server_from_wire),
            ProtocolVersion::V0_7 => crate::v0_7::ServerMessage::decode(bytes)
                .map_err(|e| Inbound::Malformed(e.to_string()))
                .and_then(map::v0_7::server_from_wire),
        };
        decoded.map_err(|e| named(e, Side::Server, bytes))
    }

    /// A registration, decoded and checked (both versions read as 0.7.0's,
    /// a superset of 0.2.0's).
    pub fn decode_registration(bytes: &[u8]) -> Result<Registration, Inbound> {
        let wire = crate::v0_7::RegisterRunnerRequest::decode(bytes)
            .map_err(|e| Inbound::Malformed(e.to_string()))?;
        map::v0_7::registration_from_wire(wire)
    }
}

/// An unknown kind named from the bytes it came in.
fn named(why: Inbound, side: Side, bytes: &[u8]) -> Inbound {
    match why {
        Inbound::Unknown(kind) if kind.field.is_none() => {
            Inbound::Unknown(UnknownKind::of(side, oneof_field(bytes)))
        }
        other => other,
    }
}

/// The field number of the first field of a `ClientMessage` or
/// `ServerMessage` other than `request_id` (1): the oneof's kind, known or
/// not (each has one field besides the oneof, and the oneof one kind).
pub(crate) fn oneof_field(mut bytes: &[u8]) -> Option<u32> {
    use prost::encoding::{DecodeContext, decode_key, skip_field};
    while !bytes.is_empty() {
        let (tag, wire_type) = decode_key(&mut bytes).ok()?;
        if tag != 1 {
            return Some(tag);
        }
        skip_field(wire_type, tag, &mut bytes, DecodeContext::default()).ok()?;
    }
    None
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not a version Gantry speaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}: Gantry speaks 0.2 (0.2.0) and 0.7 (0.7.0)")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "0.2" | "0.2.0" => Ok(ProtocolVersion::V0_2),
            "0.7" | "0.7.0" => Ok(ProtocolVersion::V0_7),
            other => Err(UnknownVersion(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{AgentSdk, AgentSdkStatus, Payload, Request, TurnUpdate};
    use crate::v0_7;

    #[test]
    fn a_registration_with_sdk_status_is_0_7_and_without_is_0_2() {
        let mut sdk = AgentSdk {
            name: "codex".into(),
            ..Default::default()
        };
        let of = |sdk: &AgentSdk| Registration {
            agent_sdks: vec![sdk.clone()],
        };
        assert_eq!(ProtocolVersion::detect(&of(&sdk)), ProtocolVersion::V0_2);
        sdk.status = AgentSdkStatus::Unconfigured as i32;
        assert_eq!(ProtocolVersion::detect(&of(&sdk)), ProtocolVersion::V0_7);
        // A 0.2.0 registration decodes with no status.
        let old = crate::v0_2::RegisterRunnerRequest {
            agent_sdks: vec![crate::v0_2::AgentSdk {
                name: "gantry".into(),
                models: Vec::new(),
            }],
        };
        let read = ProtocolVersion::decode_registration(&old.encode_to_vec()).unwrap();
        assert_eq!(ProtocolVersion::detect(&read), ProtocolVersion::V0_2);
        assert_eq!("0.7.0".parse(), Ok(ProtocolVersion::V0_7));
        assert!("0.5".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn messages_of_one_version_have_no_place_in_the_other() {
        let heartbeat = ServerMessage {
            request_id: Some("r".into()),
            request: Request::Heartbeat,
        };
        assert!(ProtocolVersion::V0_7.encode_server(&heartbeat).is_ok());
        let err = ProtocolVersion::V0_2.encode_server(&heartbeat).unwrap_err();
        assert_eq!(
            err.to_string(),
            "heartbeat_request does not exist in companyhelm.runner.v1 0.2"
        );
        let agent = ServerMessage {
            request_id: Some("r".into()),
            request: Request::DeleteAgent {
                agent_id: "a".into(),
            },
        };
        assert!(ProtocolVersion::V0_7.encode_server(&agent).is_err());
    }

    #[test]
    fn a_0_7_turn_update_keeps_its_thread_and_an_unknown_kind_names_its_field() {
        let wire = v0_7::ClientMessage {
            request_id: Some("r".into()),
            payload: Some(v0_7::client_message::Payload::TurnUpdate(
                v0_7::TurnUpdate {
                    sdk_turn_id: "u".into(),
                    status: v0_7::TurnStatus::Running as i32,
                    thread_id: "t".into(),
                },
            )),
        };
        let read = ProtocolVersion::V0_7
            .decode_client(&wire.encode_to_vec())
            .unwrap();
        assert_eq!(
            read.payload,
            Payload::Turn(TurnUpdate {
                sdk_turn_id: "u".into(),
                status: crate::messages::TurnStatus::Running,
                thread_id: Some("t".into()),
            })
        );
        // A heartbeat answer (field 9) is no kind of 0.2.0's.
        let heartbeat = v0_7::ClientMessage {
            request_id: Some("r".into()),
            payload: Some(v0_7::client_message::Payload::HeartbeatResponse(
                v0_7::HeartbeatResponse {},
            )),
        };
        let Err(Inbound::Unknown(kind)) =
            ProtocolVersion::V0_2.decode_client(&heartbeat.encode_to_vec())
        else {
            panic!("a heartbeat answer is no 0.2.0 kind");
        };
        assert_eq!(
            (kind.field, kind.name),
            (Some(9), Some("heartbeat_response"))
        );
        // And a 0.7.0 heartbeat request reaching a 0.2.0 runner is named too.
        let asked = v0_7::ServerMessage {
            request_id: "h".into(),
            request: Some(v0_7::server_message::Request::HeartbeatRequest(
                v0_7::HeartbeatRequest {},
            )),
        };
        let Err(Inbound::Unknown(kind)) =
            ProtocolVersion::V0_2.decode_server(&asked.encode_to_vec())
        else {
            panic!("a heartbeat request is no 0.2.0 kind");
        };
        assert_eq!(kind.name, Some("heartbeat_request"));
    }
}
