//! [`messages`](crate::messages) onto each version's wire and back: one
//! module per version. What comes in is checked against that version's
//! constraints before it is mapped; what goes out and has no place in the
//! version is a [`NotInVersion`].

pub mod v0_2;
pub mod v0_7;

use crate::ProtocolVersion;
use crate::kinds::UnknownKind;
use crate::validate::Violation;

/// A message that the version being spoken has no place for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} does not exist in companyhelm.runner.v1 {version}")]
pub struct NotInVersion {
    /// The message (its wire name).
    pub what: &'static str,
    /// The version.
    pub version: ProtocolVersion,
}

/// Why a message that came in is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inbound {
    /// Not protobuf of the message expected.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// It breaks a constraint of its version.
    #[error("{0}")]
    Invalid(#[from] Violation),
    /// Its oneof holds a kind the version does not know (named, when the
    /// bytes were seen and another version has it): a message of a peer
    /// speaking another version, to ignore.
    #[error("a message of a kind this version does not know: {0}")]
    Unknown(UnknownKind),
}

/// `field` "must be set" for the oneof case of a message without one.
fn unset(violation: &Violation) -> bool {
    violation.rule == "must be set"
}

/// A violation of an unset oneof is an unknown kind (prost skips fields it
/// does not know, leaving the oneof empty), any other stays a violation.
pub(crate) fn unknown_or_invalid(violation: Violation) -> Inbound {
    if unset(&violation) {
        Inbound::Unknown(UnknownKind::UNSEEN)
    } else {
        Inbound::Invalid(violation)
    }
}
