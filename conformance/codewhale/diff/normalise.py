"""What record.py and ../test_diff.py share: running the request script
against a server (HTTP with urllib, stdio line by line), and the
normaliser, which loosens only what is generated (ids, timestamps, the
paths of temporary directories) and what the protocol leaves to the
implementation (the service name, the model list's contents).

Everything else of an answer is compared: its status, the headers in
KEPT_HEADERS, every JSON value (objects compared as objects: key order is
not part of JSON's meaning), and any non-JSON body as text."""

import copy
import json
import os
import re
import select
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "script.json")
GOLDEN = os.path.join(HERE, "golden")

# Headers the reference sets that a client may read; `date` and
# `content-length` follow from the clock and the (normalised) body.
KEPT_HEADERS = (
    "content-type",
    "allow",
    "vary",
    "www-authenticate",
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-allow-credentials",
    "access-control-expose-headers",
    "access-control-max-age",
)

# A generated id: a UUID, bare (Gantry) or behind a word (`thread-`, `goal-`,
# `resp-`, `tool-`: the reference).
ID = re.compile(r"\b(?:[a-z]+-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# Keys whose integer values are clock readings.
TIME_KEYS = {"created_at", "updated_at", "saved_at", "at", "archived_at"}
# Keys whose values are generated ids whatever their form.
ID_KEYS = {"goal_id", "message_id", "assistant_message_id", "response_id", "turn_id", "item_id"}

HANG_GUARD = 30.0


def script_path(version):
    """The request script of `version`: 0.10's own (its creations carry an
    `operation_key`, its turns `allowed_tools`), else the seed's."""
    if version.startswith("0.10."):
        return os.path.join(HERE, "script-0.10.json")
    return SCRIPT


def load_script(version="0.8.59"):
    with open(script_path(version)) as f:
        return json.load(f)


def golden_dir(version, transport):
    return os.path.join(GOLDEN, version, transport)


def golden_path(version, transport, index, name):
    return os.path.join(golden_dir(version, transport), f"{index:03d}-{name}.json")


class Context:
    """The values of one run: captured ids and the paths of its temporary
    directories, each with the placeholder that stands for it."""

    def __init__(self, paths, fallback=None):
        # placeholder -> value, e.g. {"workspace": "/tmp/x/ws"}
        self.paths = dict(paths)
        self.captured = {}
        # What an id nothing captured stands for (a reference without an
        # engine creates no thread): taken as captured when first named.
        self.fallback = dict(fallback or {})

    def substitute(self, value):
        """`value` with every `{{name}}` replaced by its path or captured id."""
        if isinstance(value, str):
            def one(m):
                key = m.group(1)
                if key in self.captured:
                    return self.captured[key]
                if key in self.paths:
                    return self.paths[key]
                if key in self.fallback:
                    self.captured[key] = self.fallback[key]
                    return self.captured[key]
                raise KeyError(f"the script names {{{{{key}}}}}, which nothing captured")
            return re.sub(r"\{\{(\w+)\}\}", one, value)
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        return value

    def capture(self, exchange, answer):
        """Keeps the ids the exchange names (`capture: {name: dotted.path}`)."""
        for name, path in (exchange.get("capture") or {}).items():
            value = answer
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, str):
                self.captured[name] = value

    def normalise_text(self, text):
        # Longest first: a captured id inside a longer one stays whole.
        replacements = [(v, f"<{k}>") for k, v in self.captured.items()]
        replacements += [(v, f"<{k}>") for k, v in self.paths.items() if v]
        for value, placeholder in sorted(replacements, key=lambda r: -len(r[0])):
            text = text.replace(value, placeholder)
        return ID.sub("<id>", text)

    def normalise(self, value, key=None):
        if isinstance(value, dict):
            return {k: self.normalise(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.normalise(v) for v in value]
        if key in TIME_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return "<time>"
        if isinstance(value, str):
            text = self.normalise_text(value)
            if key in ID_KEYS and not text.startswith("<"):
                return "<id>"
            # A JSON document inside a string (the reference's prompt output,
            # its job deltas) is normalised as JSON.
            if value[:1] in "{[":
                try:
                    inner = json.loads(value)
                except ValueError:
                    return text
                return json.dumps(self.normalise(inner), sort_keys=True)
            return text
        if (key in ID_KEYS or key == "id") and isinstance(value, int) and not isinstance(value, bool):
            return "<id>"
        return value


def _is_healthz(exchange):
    return exchange.get("path") == "/healthz" or exchange.get("method") in ("healthz", "app/healthz")


def implementation_defined(exchange, body):
    """Loosens what the protocol leaves to each implementation: the service's
    name (healthz) and the model list's contents."""
    if not isinstance(body, dict):
        return body
    body = copy.deepcopy(body)
    if "service" in body and _is_healthz(exchange):
        body["service"] = "<service>"
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("models"), list) and exchange["name"] == "models":
        data["models"] = "<models>"
    result = body.get("result")
    if isinstance(result, dict):
        if "service" in result and _is_healthz(exchange):
            result["service"] = "<service>"
        rdata = result.get("data")
        if isinstance(rdata, dict) and isinstance(rdata.get("models"), list) and exchange["name"] == "models":
            rdata["models"] = "<models>"
    return body


# ---------------------------------------------------------------- HTTP

def http_call(base, token, exchange, ctx):
    """Sends one HTTP exchange; (status, kept headers, body: JSON or text)."""
    path = ctx.substitute(exchange["path"])
    headers = {}
    auth = exchange.get("auth", "token")
    if auth == "token":
        headers["Authorization"] = f"Bearer {token}"
    elif auth == "wrong":
        headers["Authorization"] = "Bearer not-the-token"
    elif auth == "lowercase":
        headers["Authorization"] = f"bearer {token}"
    data = None
    if "raw" in exchange:
        data = exchange["raw"].encode()
    elif "body" in exchange:
        data = json.dumps(ctx.substitute(exchange["body"])).encode()
        headers["Content-Type"] = "application/json"
    if "headers" in exchange:
        # Given headers replace the default Content-Type.
        headers.pop("Content-Type", None)
        headers.update(exchange["headers"])
    host, port = base.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=HANG_GUARD)
    try:
        conn.request(exchange["method"], path, body=data, headers=headers)
        response = conn.getresponse()
        status, head, raw = response.status, response.headers, response.read()
    finally:
        conn.close()
    kept = {}
    for name in KEPT_HEADERS:
        values = head.get_all(name)
        if values:
            kept[name] = ", ".join(values)
    text = raw.decode(errors="replace")
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = text
    if not isinstance(body, (dict, list)) and text:
        body = text
    return status, kept, body


def run_http(base, token, exchanges, ctx, after=None):
    """Runs the HTTP session; one normalised answer per exchange.
    `after(exchange, ctx)` runs after each (the replay waits for turns)."""
    answers = []
    for exchange in exchanges:
        status, headers, body = http_call(base, token, exchange, ctx)
        if isinstance(body, dict):
            ctx.capture(exchange, body)
        if after:
            after(exchange, ctx)
        answers.append(_answer(exchange, ctx, status=status, headers=headers, body=body))
    return answers


def _answer(exchange, ctx, **answer):
    request = {k: v for k, v in exchange.items() if k not in ("note", "judge", "twin")}
    out = {"exchange": request}
    for key, value in answer.items():
        if key == "body" and isinstance(value, str):
            out[key] = ctx.normalise_text(value)
        elif key in ("body", "message"):
            out[key] = implementation_defined(exchange, ctx.normalise(value))
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------- stdio

class StdioPeer:
    """A stdio JSON-RPC server (a started process) spoken to line by line."""

    def __init__(self, proc):
        self.proc = proc
        self.buffer = ""

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def read(self):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + HANG_GUARD
        while "\n" not in self.buffer:
            if time.monotonic() > deadline:
                raise AssertionError("stdio: no answer came")
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise AssertionError("stdio: the process ended")
                self.buffer += chunk.decode()
        line, _, self.buffer = self.buffer.partition("\n")
        return json.loads(line)

    def answer(self):
        """The next line that answers a request (notifications skipped:
        the reference sends none, and Gantry's turn frames are not
        compared; nor the frame lines of a 0.10 turn)."""
        while True:
            message = self.read()
            if "method" not in message and "jsonrpc" in message:
                return message


def run_stdio(peer, exchanges, ctx, after=None):
    answers = []
    for number, exchange in enumerate(exchanges, 1):
        if "raw" in exchange:
            line = exchange["raw"]
        else:
            message = {"jsonrpc": "2.0", "id": exchange.get("id", number), "method": exchange["method"]}
            if "params" in exchange:
                message["params"] = ctx.substitute(exchange["params"])
            line = json.dumps(message)
        peer.send(line)
        message = peer.answer()
        if isinstance(message.get("result"), dict):
            ctx.capture(exchange, message["result"])
        if after:
            after(exchange, ctx)
        answer = _answer(exchange, ctx, message=message)
        # The request's own id, as sent (not a generated one).
        answer["message"]["id"] = message.get("id")
        answers.append(answer)
    return answers


# ---------------------------------------------------------------- judging

def expected_stdio(twin, exchange, number):
    """The stdio answer the reference's dispatch gives for what its HTTP
    route answered as `twin`: a thread or prompt request the runtime
    failed is answered over HTTP as a 200 (`status: "error:<why>"`, a
    prompt's `model: "unknown"`) and over stdio as -32603 `<why>`; every
    other answer is the same JSON, as the JSON-RPC result."""
    body = twin["body"]
    request_id = exchange.get("id", number)
    route = twin["exchange"]["path"]
    error = None
    if route == "/thread" and isinstance(body.get("status"), str) and body["status"].startswith("error:"):
        error = body["status"][len("error:"):]
    if route == "/prompt" and body.get("model") == "unknown" and not body.get("events"):
        error = body["output"]
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id,
                "error": {"code": -32603, "message": error, "data": None}}
    return {"jsonrpc": "2.0", "id": request_id, "result": body}


def shape(value):
    """A value's shape: objects by their keys, lists by their items'
    shapes, scalars by their type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        shapes = []
        for item in value:
            s = shape(item)
            if s not in shapes:
                shapes.append(s)
        return ["list", *shapes] if shapes else ["list"]
    if value is None:
        return "null"
    return type(value).__name__


def differences(expected, actual, path="body"):
    """(path, expected, actual) for every place the two differ."""
    out = []
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            sub = f"{path}.{key}"
            if key not in actual:
                out.append((sub, expected[key], "<absent>"))
            elif key not in expected:
                out.append((sub, "<absent>", actual[key]))
            else:
                out.extend(differences(expected[key], actual[key], sub))
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append((f"{path}.length", len(expected), len(actual)))
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(differences(e, a, f"{path}.{i}"))
    elif expected != actual or type(expected) is not type(actual):
        out.append((path, expected, actual))
    return out


def shape_differences(expected, actual, path="body"):
    """Differences of shape: a key one side lacks, a type that differs; a
    list's items are judged only when both sides have some."""
    out = []
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            sub = f"{path}.{key}"
            if key not in actual:
                out.append((sub, shape(expected[key]), "<absent>"))
            elif key not in expected:
                out.append((sub, "<absent>", shape(actual[key])))
            else:
                out.extend(shape_differences(expected[key], actual[key], sub))
    elif isinstance(expected, list) and isinstance(actual, list):
        if expected and actual:
            out.extend(shape_differences(expected[0], actual[0], f"{path}.0"))
    elif shape(expected) != shape(actual):
        out.append((path, shape(expected), shape(actual)))
    return out
