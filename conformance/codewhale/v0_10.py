"""What the 0.10 replay allows, and how its stdio goldens are read.

The 0.10.2 library alone holds no engine: for what needs one (a thread,
a turn, the models, applying a config change) it answers
`runtime_unavailable`, and Gantry, which is that engine, does the work,
with the shapes the library's source gives. Those exchanges are listed
here with that reason; everything the library answers before it needs an
engine must match."""

import copy

# The library's stdio dispatch was recorded through its daemon socket
# (diff/README.md): the same dispatch names that transport `unix-socket`
# and lists its handshake method (lib.rs: `transport.label()`,
# `methods.insert(1, daemon_socket::ATTACH_METHOD)`).
SOCKET_ONLY_METHOD = "daemon/attach"


def as_stdio(message):
    """A golden recorded over the daemon socket, as process stdio answers."""
    message = copy.deepcopy(message)
    result = message.get("result")
    if isinstance(result, dict):
        if result.get("transport") == "unix-socket":
            result["transport"] = "stdio"
        if isinstance(result.get("methods"), list):
            result["methods"] = [m for m in result["methods"] if m != SOCKET_ONLY_METHOD]
    return message


ENGINE = ("the reference library has no engine behind it (`runtime_unavailable`); Gantry is "
          "that engine and answers with the shapes of the library's thread_control.rs")

ALLOWED_0_10 = []

# ---------------------------------------------------------------- what needs an engine
#
# Each exchange the reference library could only answer `runtime_unavailable`
# is judged by what its source says the answer is once an engine is behind
# it (thread_control.rs `project_thread`, `present_receipt`, `response`;
# lib.rs `run_http_thread_message`, `run_prompt_turn`, `message_thread`).

THREAD_KEYS = {"id", "preview", "ephemeral", "model_provider", "created_at", "updated_at",
               "status", "cwd", "cli_version", "source"}
RECEIPT_KEYS = {"version", "data_dir", "execution_scope", "operation_key", "request_digest",
                "history_digest", "runtime_thread_id", "session_id"}
SNAPSHOT_KEYS = {"version", "data_dir", "execution_scope", "runtime_thread_id", "saved_session_id",
                 "saved_document_digest", "document_digest", "session_goal_digest", "session"}
# A projected thread's record: what the library reads of it.
RECORD_KEYS = {"id", "model", "model_provider", "workspace", "title", "archived", "created_at",
               "updated_at"}

CREATIONS = {"thread-start": "started", "thread-start-again": "started",
             "thread-start-default-cwd": "started", "thread-request-start": "started",
             "thread-create": "created", "thread-resume": "resumed", "thread-fork": "forked"}
ABOUT = {"thread-read", "thread-set-name", "thread-archive", "thread-unarchive"}


def _thread(problems, thread, where):
    if not isinstance(thread, dict):
        problems.append(f"{where}: no thread")
        return
    keys = set(thread) - {"name", "path"}
    if keys != THREAD_KEYS:
        problems.append(f"{where}: thread keys {sorted(keys ^ THREAD_KEYS)} differ")
    if thread.get("preview") != "" or thread.get("ephemeral") is not False \
            or thread.get("source") != "api":
        problems.append(f"{where}: a projected thread has no preview, is not ephemeral, "
                        f"comes from the api: {thread}")
    if thread.get("status") not in ("idle", "running", "archived"):
        problems.append(f"{where}: status {thread.get('status')!r}")


def _keys(problems, value, keys, where):
    if not isinstance(value, dict) or not keys <= set(value):
        problems.append(f"{where}: lacks {sorted(keys - set(value or {}))}")


def _one_response(problems, events, where):
    names = [e.get("event", e.get("type")) for e in events]
    if names[:1] != ["response_start"] or names[-1:] != ["response_end"] \
            or "response_delta" not in names:
        problems.append(f"{where}: frames {names}")
    ids = {e.get("response_id") for e in events if "response_id" in e}
    if len(ids) != 1:
        problems.append(f"{where}: one response a turn, got {ids}")


def engine_problems(transport, name, exchange, answer):
    """What Gantry's answer lacks of the shape the library's source gives."""
    problems = []
    if transport == "http":
        status, body = answer["status"], answer["body"]
    else:
        message = answer["message"]
        status = 200 if "result" in message else 400
        body = message.get("result", message.get("error"))
    request = exchange.get("body") or exchange.get("params") or {}
    if (name.endswith("-unknown") and name.startswith(("thread", "goal"))) \
            or name == "thread-set-name-dash":
        error = body.get("error", body) if isinstance(body, dict) else {}
        code = error.get("jsonrpc_code", error.get("code"))
        if code != -32004 or (transport == "http" and status != 404):
            problems.append(f"not found is -32004 (404): {status} {body}")
        return problems
    if status != 200 or not isinstance(body, dict):
        return [f"done: {status} {body}"]
    if name in CREATIONS or name in ABOUT:
        if body.get("status") != CREATIONS.get(name, "ok"):
            problems.append(f"status {body.get('status')!r}")
        _thread(problems, body.get("thread"), name)
        for absent in ("approval_policy", "sandbox", "goal"):
            if absent in body:
                problems.append(f"{absent} is left out")
        for present in ("model", "model_provider", "cwd"):
            if not isinstance(body.get(present), str):
                problems.append(f"{present} is the thread's")
        data = body.get("data") or {}
        if name in CREATIONS:
            _keys(problems, data.get("receipt"), RECEIPT_KEYS, "data.receipt")
            if (data.get("receipt") or {}).get("operation_key") != request.get(
                    "operation_key", (request.get("metadata") or {}).get("operation_key")):
                problems.append("the receipt names the request's operation_key")
        _keys(problems, data.get("thread"), RECORD_KEYS, "data.thread")
        if name == "thread-read":
            _keys(problems, data.get("history"), SNAPSHOT_KEYS, "data.history")
    elif name.startswith("thread-list") or name.startswith("thread-loaded-list"):
        threads = body.get("threads", (body.get("data") or {}).get("threads"))
        if not isinstance(threads, list):
            problems.append("threads listed")
        for t in threads or []:
            _thread(problems, t, name)
    elif name.startswith(("goal-get", "goal-clear")):
        data = body.get("data") or {}
        if set(data) != {"goal", "cleared"}:
            problems.append(f"data {data}")
    elif name.startswith("thread-message"):
        if transport == "http":
            if body.get("status") != "completed" or not isinstance(body.get("model"), str):
                problems.append(f"a message is answered completed with its model: {body}")
            _one_response(problems, body.get("events") or [], name)
        elif body.get("status") != "accepted":
            problems.append(f"a stdio message is answered accepted: {body}")
        if not isinstance((body.get("data") or {}).get("turn_id"), str):
            problems.append("data.turn_id")
    elif name.startswith("prompt"):
        if not isinstance(body.get("output"), str) or not isinstance(body.get("model"), str):
            problems.append(f"a prompt is answered with its output and model: {body}")
        _one_response(problems, body.get("events") or [], name)
    elif not body.get("ok", True):
        problems.append(f"done: {body}")
    return problems


def engine(pattern, transport="*"):
    return (transport, pattern, "*", ENGINE)


ALLOWED_0_10 = [
    # Security, as on the seed's listener.
    ("http", "cors-*", "*",
     "Host/Origin guard: a page of another origin (localhost:3000 included, which the reference "
     "lets through by default) cannot drive the agent, token or not (DNS rebinding)"),
    # What needs an engine (each also judged by engine_problems).
    engine("thread-list*"), engine("thread-start"), engine("thread-start-again"),
    engine("thread-start-default-cwd"), engine("thread-request-start"), engine("thread-create"),
    engine("thread-read"), engine("thread-set-name"), engine("thread-archive"),
    engine("thread-unarchive"), engine("thread-resume"), engine("thread-fork"),
    engine("goal-get*"), engine("goal-clear*"), engine("thread-message"),
    engine("prompt"), engine("prompt-on-thread"), engine("prompt-request"),
    engine("prompt-run-on-thread"), engine("models"), engine("thread-loaded-list*"),
    engine("thread-*-unknown"), engine("thread-set-name-dash"),
    ("*", "thread-message-needs-allowed-tools", "*",
     "Gantry, the engine, answers approvals and questions on these transports: a message "
     "without allowed_tools runs with the thread's tools (the library sends such turns to "
     "its runtime's /v1 API)"),
    ("*", "thread-message-tools-refused", "*", "as thread-message-needs-allowed-tools: a message "
     "naming tools runs with those"),
    ("*", "*capabilities", "*.interactive_execution",
     "Gantry runs interactive turns on these transports (see thread-message-needs-allowed-tools)"),
    ("*", "*capabilities", "*.data.routes*", "the routes Gantry serves"),
    ("*", "*capabilities", "*.data.events*", "the frames Gantry sends"),
    ("*", "*capabilities", "*.data.config*", "no reload: Gantry applies each change as it is made"),
    ("*", "config-set-approval", "*", ENGINE + ": the change applied"),
    ("*", "config-unset-approval", "*", ENGINE + ": the change applied"),
    ("*", "config-reload", "*.data.error",
     "Gantry applies each config change as it is made; its config file is read at start"),
    ("*", "config-*", "*.values.provider*", "Gantry's provider registry (the reference's default "
     "is `deepseek`)"),
    ("*", "config-*", "*.values.model", "Gantry always has a default model"),
    ("*", "config-get-model", "*.data.value", "as values.model"),
    ("*", "config-get-provider", "*.data.value", "as values.provider"),
    ("*", "config-get-api-key", "*.data.value", "the engine masks a key its own way (`sk-...3456`)"),
    ("*", "submit-user-input-unknown", "*.data.error",
     "Gantry delivers answers to questions (see thread-message-needs-allowed-tools); one to a "
     "question nobody waits on is refused as such"),
    ("*", "submit-user-input-unknown", "*.data.message", "as data.error"),
]
