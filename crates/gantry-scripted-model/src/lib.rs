//! A scripted mock LLM: a real HTTP server on 127.0.0.1 that speaks three
//! provider APIs with their real SSE streaming formats (OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages), and answers each
//! request with the next step of a script, in the format of the path it came
//! to. `gantry exec --model scripted:FILE` serves one in-process, and tests
//! and benchmarks use it (through `gantry-testkit`, which re-exports it), so
//! real clients are exercised over real HTTP.
//!
//! # Script format
//!
//! A JSON file holding `{"steps": [STEP, ...]}` (or just the array). Each
//! request to `POST /v1/chat/completions`, `/v1/responses` or `/v1/messages`
//! (each also without `/v1`) consumes the next step. A step is a reply, an
//! HTTP error, or a recorded transcript (`{"raw": {"sse": "..."}}`, replayed
//! byte for byte):
//!
//! ```json
//! {"steps": [
//!   {"reply": {"reasoning": "The user wants a listing.",
//!              "text": "Let me look.",
//!              "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}},
//!   {"error": {"status": 429, "retry_after": 1}},
//!   {"reply": {"text": "There are two files.", "chunk_size": 4, "delay_ms": 20}}
//! ]}
//! ```
//!
//! `reply` fields (all optional):
//!
//! | field | meaning |
//! |---|---|
//! | `text` | answer text, streamed as `content` deltas |
//! | `reasoning` | streamed as `reasoning_content` deltas, before the text |
//! | `tool_calls` | `[{"id": "call_1", "name": "shell", "arguments": {...}}]`; `id` defaults to `call_<n>` (n counts calls over the whole script from 1); `arguments` is a JSON object, or a string sent verbatim (even if it is not valid JSON) |
//! | `usage` | `{"prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens"}`; default: about 4 characters per token |
//! | `chunk_size` | characters per text/reasoning chunk (default 16); tool-call arguments are sent in fragments of at most this size, and in at least two |
//! | `delay_ms` | sleep before each chunk (default 0) |
//! | `cut_after` | close the connection abruptly after N `data:` events, without `[DONE]` |
//! | `malformed_after` | after N `data:` events, send `data: {not json` (then carry on) |
//! | `error_after` | after N `data:` events, send `data: {"error": {...}}` and end the body |
//! | `finish_reason` | override (default `tool_calls` when there are calls, else `stop`) |
//! | `model` | the model the answer names (default: the request's `model`) |
//!
//! "N events" counts every `data:` event, starting with the first one, which
//! only carries `"role": "assistant"` (for Responses and Anthropic: every SSE
//! event, from `response.created` / `message_start`). Default tool-call ids
//! are `call_<n>` (Anthropic: `toolu_<n>`).
//!
//! Each answer names itself as its provider's do, on every chunk (Chat
//! Completions), in `response.created` (Responses) or `message_start`
//! (Anthropic): its id is `chatcmpl-gantry<n>`, `resp_gantry<n>` or
//! `msg_gantry<n>` (n counts the steps served, errors included, from 1),
//! its model the reply's `model`.
//!
//! `error` fields: `status` (required), `retry_after` (seconds, sent as the
//! `Retry-After` header), `body` (any JSON; default an OpenAI-style
//! `{"error": {"message", "type", "param", "code"}}`).
//!
//! When the script is used up the server answers HTTP 400 with
//! `gantry-scripted-model: script exhausted after N requests` (400, so clients do
//! not retry).
//!
//! # Wire format
//!
//! With `"stream": true` the answer is `text/event-stream`: one
//! `chat.completion.chunk` per `data:` event (role, then reasoning, text, and
//! for each tool call a chunk with `index`, `id`, `type`, `function.name`
//! followed by argument fragments carrying only `index`), a chunk with
//! `finish_reason`, a usage chunk (`choices: []`) when the request set
//! `stream_options.include_usage`, then `data: [DONE]`. Otherwise one
//! `chat.completion` JSON object. The Responses and Anthropic formats follow
//! their providers' documented event sequences; see `wire/`.
//!
//! # In Rust
//!
//! ```no_run
//! use gantry_scripted_model::{MockLlm, Script, Step};
//! use serde_json::json;
//!
//! # async fn demo() -> std::io::Result<()> {
//! let llm = MockLlm::start(vec![
//!     Step::tool_call("shell", json!({"command": "ls"})).with_chunk_size(4),
//!     Step::http_error(429).with_retry_after(1.0),
//!     Step::text("done"),
//! ])?;
//! let base_url = llm.base_url(); // http://127.0.0.1:PORT/v1
//! // ... point a client at base_url, then:
//! assert_eq!(llm.remaining(), 0);
//! let first = &llm.requests()[0];
//! assert_eq!(first.header("authorization"), Some("Bearer test-key"));
//! assert!(first.images().is_empty()); // the images its messages carried
//! # let _ = (base_url, Script::default());
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod images;
mod script;
mod server;
mod wire;

pub use images::RecordedImage;
pub use script::{HttpError, RawReply, Reply, Script, ScriptError, Step, ToolCallSpec, UsageSpec};
pub use server::{MockLlm, RecordedRequest};
