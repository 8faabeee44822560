//! `SubscribeEvents.event_types`: which `AgentEvent` types a client wants.

use std::collections::HashSet;

use gantry_grpc::clip;
use tonic::Status;

use crate::pb::agent_event::EventType;

/// The event types a subscriber wants; every type when it named none.
#[derive(Debug)]
pub(super) struct Wanted(Option<HashSet<i32>>);

impl Wanted {
    /// The types `names` name: lower snake case without the prefix
    /// (`tool_called`), or the enum's own name (`EVENT_TYPE_TOOL_CALLED`),
    /// in any case. `INVALID_ARGUMENT` names the first unknown one.
    pub(super) fn parse(names: &[String]) -> Result<Self, Status> {
        if names.is_empty() {
            return Ok(Self(None));
        }
        let types = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                event_type(name).map(|t| t as i32).ok_or_else(|| {
                    Status::invalid_argument(format!(
                        "event_types[{i}]: unknown event type `{name}` (e.g. `session_created`, `tool_called`, `confirmation_required`)", name = clip(name)
                    ))
                })
            })
            .collect::<Result<HashSet<_>, _>>()?;
        Ok(Self(Some(types)))
    }

    /// Whether the subscriber wants an event of type `kind`.
    pub(super) fn wants(&self, kind: i32) -> bool {
        self.0.as_ref().is_none_or(|types| types.contains(&kind))
    }
}

/// The type a name stands for; `UNKNOWN` is no type a client can want.
fn event_type(name: &str) -> Option<EventType> {
    let upper = name.trim().to_ascii_uppercase();
    let full = if upper.starts_with("EVENT_TYPE_") {
        upper
    } else {
        format!("EVENT_TYPE_{upper}")
    };
    EventType::from_str_name(&full).filter(|t| *t != EventType::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn short_full_and_any_case_names_are_accepted() {
        let wanted = Wanted::parse(&names(&[
            "tool_called",
            "EVENT_TYPE_CONFIRMATION_REQUIRED",
            " Memories_Searched ",
        ]))
        .unwrap();
        assert!(wanted.wants(EventType::ToolCalled as i32));
        assert!(wanted.wants(EventType::ConfirmationRequired as i32));
        assert!(wanted.wants(EventType::MemoriesSearched as i32));
        assert!(!wanted.wants(EventType::SessionCreated as i32));
        assert!(Wanted::parse(&[]).unwrap().wants(EventType::Info as i32));
    }

    #[test]
    fn unknown_names_are_refused_by_name() {
        for bad in ["tool_callled", "unknown", "EVENT_TYPE_UNKNOWN", ""] {
            let e = Wanted::parse(&names(&["info", bad])).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument);
            assert!(e.message().starts_with("event_types[1]"), "{e:?}");
            assert!(e.message().contains(&format!("`{bad}`")), "{e:?}");
        }
    }
}
