//! The conversation a request carries, with each message's wire JSON kept
//! beside it: the agent loop sends the same growing history every round, so
//! a message is serialised once per API, not once per request.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::Message;
use crate::wire::{Wire, WireCache};

/// The conversation so far: messages that can be appended, never changed in
/// place (a changed history, e.g. after a compaction or with images left
/// out, is a new `History`), so a cached wire form can never go stale.
///
/// Cheap to clone: clones share the messages until one of them appends.
#[derive(Clone, Default)]
pub struct History {
    inner: Arc<Entries>,
}

/// The messages and, at the same index, their cached wire forms.
#[derive(Clone, Default)]
struct Entries {
    messages: Vec<Message>,
    wire: Vec<WireCache>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message (copying the history first only if a clone of it,
    /// e.g. a request still in flight, shares it).
    pub fn push(&mut self, message: Message) {
        let entries = Arc::make_mut(&mut self.inner);
        entries.messages.push(message);
        entries.wire.push(WireCache::default());
    }

    /// Each message with its JSON fragment for `wire`: what `render` makes of
    /// it, made on the first call for that message and API and kept.
    pub(crate) fn rendered(
        &self,
        wire: Wire,
        render: fn(&Message) -> String,
    ) -> impl Iterator<Item = (&Message, &str)> {
        self.inner
            .messages
            .iter()
            .zip(&self.inner.wire)
            .map(move |(m, cache)| (m, cache.get(wire, || render(m))))
    }
}

impl Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.inner.messages
    }
}

impl Extend<Message> for History {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        for m in messages {
            self.push(m);
        }
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        let wire = std::iter::repeat_with(WireCache::default)
            .take(messages.len())
            .collect();
        Self {
            inner: Arc::new(Entries { messages, wire }),
        }
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        messages.into_iter().collect::<Vec<_>>().into()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.inner.messages == other.inner.messages
    }
}

impl fmt::Debug for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static RENDERS: AtomicUsize = AtomicUsize::new(0);

    fn counting(m: &Message) -> String {
        RENDERS.fetch_add(1, Ordering::SeqCst);
        format!("{m:?}")
    }

    #[test]
    fn each_message_renders_once_per_api_across_requests() {
        let mut history = History::from(vec![Message::user("a")]);
        let request = history.clone();
        assert_eq!(request.rendered(Wire::Chat, counting).count(), 1);
        drop(request);
        history.push(Message::user("b"));
        let fragments: Vec<String> = history
            .rendered(Wire::Chat, counting)
            .map(|(_, f)| f.to_owned())
            .collect();
        assert_eq!(
            fragments,
            [format!("{:?}", history[0]), format!("{:?}", history[1])]
        );
        // "a" once, "b" once: the first request's rendering was kept.
        assert_eq!(RENDERS.load(Ordering::SeqCst), 2);
        history.rendered(Wire::Anthropic, counting).for_each(drop);
        assert_eq!(
            RENDERS.load(Ordering::SeqCst),
            4,
            "another API renders its own"
        );
    }

    #[test]
    fn appending_to_a_shared_history_leaves_the_other_unchanged() {
        let mut history = History::from(vec![Message::user("a")]);
        let in_flight = history.clone();
        history.extend([Message::user("b")]);
        assert_eq!(in_flight.len(), 1);
        assert_eq!(history.len(), 2);
        assert_eq!(history[..1], in_flight[..]);
    }

    /// A round of the agent loop: the model's answer (reasoning of every
    /// kind, text, calls with good and bad arguments), its results, and a
    /// steered user message.
    fn round(history: &mut History, r: usize) {
        let reasoning = vec![
            crate::ReasoningBlock {
                text: format!("thought {r}"),
                signature: Some("sig".into()),
                opaque: None,
            },
            crate::ReasoningBlock {
                text: "summary".into(),
                signature: None,
                opaque: Some(r#"{"id":"rs_1","encrypted_content":"gAAA"}"#.into()),
            },
        ];
        let calls = [format!(r#"{{"command":"echo \"{r}\""}}"#), "{bad".into()];
        history.push(Message::Assistant {
            reasoning,
            text: if r.is_multiple_of(2) {
                format!("Round {r} ✓")
            } else {
                String::new()
            },
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(i, arguments)| crate::ToolCall {
                    id: format!("call_{r}_{i}"),
                    name: "shell".into(),
                    arguments: arguments.clone(),
                })
                .collect(),
        });
        history.extend((0..2).map(|i| Message::ToolResult {
            call_id: format!("call_{r}_{i}"),
            output: if i == 0 {
                format!("line\n\t{r}")
            } else {
                String::new()
            },
        }));
        if r == 2 {
            history.push(Message::user("steer"));
        }
    }

    #[test]
    fn every_api_body_is_the_uncached_body_byte_for_byte_across_rounds() {
        type Body = fn(&crate::ModelRequest) -> String;
        fn chat(request: &crate::ModelRequest) -> String {
            crate::openai_chat::request::body(request, None, true)
        }
        let bodies: [(&str, Body); 3] = [
            ("chat", chat),
            ("responses", crate::openai_responses::request::body),
            ("anthropic", crate::anthropic::request::body),
        ];
        for (api, body) in bodies {
            let image = gantry_types::ImagePart::new("image/png", "aGk=");
            let mut history = History::from(vec![Message::User {
                text: "look".into(),
                images: vec![image],
            }]);
            let mut request = crate::ModelRequest {
                model: "m".into(),
                instructions: Some("Be brief.".into()),
                reasoning: Some("high".into()),
                tools: vec![gantry_types::ToolSpec {
                    name: "shell".into(),
                    description: "Runs a command.".into(),
                    parameters: serde_json::json!({"type": "object", "properties": {
                        "command": {"type": "string", "description": "bash \"-c\""}}}),
                }]
                .into(),
                ..crate::ModelRequest::default()
            };
            for r in 1..=4 {
                request.messages = history.clone();
                let cached = body(&request);
                let cached_tools = request.tools.clone();
                request.messages = History::from(history.to_vec());
                request.tools = request.tools.to_vec().into();
                let uncached = body(&request);
                request.tools = cached_tools;
                assert_eq!(cached, uncached, "{api}, round {r}");
                // What serialising the whole body as one `Value` gives.
                let value: serde_json::Value =
                    serde_json::from_str(&cached).expect("the body is JSON");
                assert_eq!(cached, value.to_string(), "{api}, round {r}");
                round(&mut history, r);
                if r == 3 {
                    // As for a model that reads no images: a new history
                    // whose first message changed is rendered anew.
                    let mut changed = history.to_vec();
                    changed[0] = Message::user("look [image left out]");
                    history = changed.into();
                }
            }
            assert!(body(&request).contains("left out"), "{api}");
            assert!(!body(&request).contains("aGk="), "{api}");
        }
    }
}
