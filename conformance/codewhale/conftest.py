"""Conformance of Gantry to the CodeWhale app-server protocol (seed 002),
driven by clients Gantry did not write: `curl` over HTTP (`gantry serve
--codewhale-addr`) and Python's own json over stdio (`gantry codewhale
--stdio`). Every thread's model is the scripted mock LLM, reached as a
provider of the config file.

Run by crates/gantry-cli/tests/it/codewhale_conformance.rs, which passes
the binaries: GANTRY_BIN and GANTRY_MOCK_LLM.
"""

import json
import os
import pathlib
import re
import select
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import HANG_GUARD, MockLlm, binary  # noqa: E402

TOKEN = "cw-test-token"


def environment(tmp_path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        # A bare home: no user config, skills or login profile leak in.
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }


def write_config(tmp_path, llm):
    """A config file whose default model is served by `llm`."""
    config = tmp_path / "config.toml"
    config.write_text(
        'default_model = "mock/gpt-4.1-mini"\n'
        "[providers.mock]\n"
        'kind = "openai-chat"\n'
        f'base_url = "{llm.base_url}"\n'
        'api_key = "sk-test-secret-key-123456"\n'
        'models = ["gpt-4.1-mini"]\n'
    )
    return config


def startup_line(stream, pattern):
    """The match of `pattern` among the first lines of `stream`, read from
    its file descriptor: `gantry serve` prints its A3S line first, and a
    buffered readline could swallow the next line unseen by select."""
    fd = stream.fileno()
    deadline = time.monotonic() + HANG_GUARD
    text = ""
    while time.monotonic() < deadline:
        # Whole lines only: a port cut short is another port.
        for line in text.split("\n")[:-1]:
            match = re.search(pattern, line)
            if match:
                return match
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            text += chunk.decode(errors="replace")
    raise AssertionError(f"gantry serve did not start; it said: {text!r}")


class Curl:
    """Every HTTP call of the suite, made by curl."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, headers=None, token=TOKEN, raw=None):
        """(status, headers text, body text)."""
        args = ["curl", "-s", "--noproxy", "*", "-m", str(HANG_GUARD), "-X", method, "-D", "-",
                f"{self.base}{path}"]
        if token is not None:
            args += ["-H", f"Authorization: Bearer {token}"]
        for header in headers or []:
            args += ["-H", header]
        if body is not None or raw is not None:
            if headers is None:
                args += ["-H", "Content-Type: application/json"]
            args += ["--data-binary", raw if raw is not None else json.dumps(body)]
        out = subprocess.run(args, capture_output=True, text=True, timeout=HANG_GUARD + 5)
        assert out.returncode == 0, f"curl failed: {out.stderr}"
        # Text mode turned the header lines' CRLF into LF.
        head, _, text = out.stdout.partition("\n\n")
        status = int(head.split()[1])
        return status, head.lower(), text

    def json(self, path, body, **kw):
        """POSTs `body`; the JSON answer (which must be a 200)."""
        status, _, text = self.call("POST", path, body, **kw)
        assert status == 200, f"{path} -> {status}: {text}"
        return json.loads(text)

    def thread(self, **body):
        return self.json("/thread", body)

    def app(self, **body):
        return self.json("/app", body)


class Sse:
    """`curl -N` following a thread's frames: each is (id or None, frame)."""

    def __init__(self, base, thread_id, last_event_id=None):
        args = ["curl", "-s", "-N", "--noproxy", "*", "-H", f"Authorization: Bearer {TOKEN}"]
        if last_event_id is not None:
            args += ["-H", f"Last-Event-ID: {last_event_id}"]
        args.append(f"{base}/thread/{thread_id}/events")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE)
        self.fd = self.proc.stdout.fileno()
        self.buffer = ""
        self.last_id = last_event_id

    def line(self):
        """The next line, read from the descriptor (a buffered readline
        would hide lines it read ahead from select)."""
        deadline = time.monotonic() + HANG_GUARD
        while "\n" not in self.buffer:
            assert time.monotonic() < deadline, "no frame came"
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                chunk = os.read(self.fd, 65536)
                assert chunk, "the stream ended"
                self.buffer += chunk.decode()
        line, _, self.buffer = self.buffer.partition("\n")
        return line

    def next(self):
        """The next frame and the id it carries (None: keeps the last one)."""
        event_id, data = None, None
        while True:
            line = self.line()
            if line.startswith("data:"):
                data = json.loads(line[5:].strip())
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            elif line == "" and data is not None:
                if event_id is not None:
                    self.last_id = event_id
                return event_id, data

    def until(self, event):
        """Frames up to and including the first `event` frame."""
        frames = []
        while True:
            _, frame = self.next()
            frames.append(frame)
            if frame["event"] == event:
                return frames

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Server:
    """`gantry serve` with CodeWhale over HTTP, its model scripted."""

    def __init__(self, tmp_path, steps, version="0.8.59", data_dir=None):
        """`data_dir`: the store's (kept across restarts); else in memory."""
        self.llm = MockLlm(steps, tmp_path)
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        store = ["--storage-backend", "memory"] if data_dir is None else []
        data = [] if data_dir is None else ["--data-dir", str(data_dir)]
        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        # The seed's listener, or 0.10's.
        flag, said = ("--codewhale10-addr", "CodeWhale 0.10 HTTP") if version.startswith("0.10") \
            else ("--codewhale-addr", "CodeWhale HTTP")
        self.proc = subprocess.Popen(
            [binary("GANTRY_BIN"), "--config", str(write_config(tmp_path, self.llm)), *data,
             "serve", "--listen-addr", "127.0.0.1:0", "--workspace", str(self.workspace),
             *store, flag, "127.0.0.1:0", "--codewhale-token-file", str(token)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=environment(tmp_path),
        )
        addr = startup_line(self.proc.stderr, rf"serving {said} on (\S+)")
        self.base = f"http://{addr.group(1)}"
        self.curl = Curl(self.base)

    def sse(self, thread_id, last_event_id=None):
        return Sse(self.base, thread_id, last_event_id)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
        self.llm.close()


@pytest.fixture
def server(tmp_path):
    """Starts `gantry serve` whose model answers `steps`: `server(steps)`."""
    started = []

    def start(steps, version="0.8.59", data_dir=None):
        s = Server(tmp_path, steps, version, data_dir)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


class Stdio:
    """`gantry codewhale --stdio`, spoken to line by line."""

    def __init__(self, tmp_path, steps, version="0.8.59"):
        self.llm = MockLlm(steps, tmp_path)
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [binary("GANTRY_BIN"), "--config", str(write_config(tmp_path, self.llm)),
             "codewhale", "--stdio", "--protocol", version, "--workspace", str(self.workspace),
             "--storage-backend", "memory"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=environment(tmp_path),
        )
        self.next_id = 0
        self.buffer = ""
        # Notifications read while waiting for answers.
        self.events = []
        # Every line stdout carried, to prove it held nothing else.
        self.lines = []

    def send_line(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self):
        """The next line of stdout, as JSON (read from the descriptor: a
        buffered readline would hide lines it read ahead from select)."""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + HANG_GUARD
        while "\n" not in self.buffer:
            assert time.monotonic() < deadline, "stdio: no answer came"
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, "stdio: the process ended"
                self.buffer += chunk.decode()
        line, _, self.buffer = self.buffer.partition("\n")
        self.lines.append(line)
        return json.loads(line)

    def answer(self, request_id):
        """The answer with `request_id`, keeping notifications read meanwhile."""
        while True:
            message = self.read()
            if "method" in message:
                self.events.append(message)
            elif message.get("id") == request_id:
                return message

    def request(self, method, params=None):
        """Calls `method`; its whole answer line."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))
        return self.answer(self.next_id)

    def call(self, method, params=None):
        """Calls `method`; its result (which must not be an error)."""
        answer = self.request(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def event(self, name):
        """The first notification of frame `name` (read or waited for)."""
        while True:
            for message in self.events:
                if message["params"]["frame"]["event"] == name:
                    self.events.remove(message)
                    return message
            message = self.read()
            assert "method" in message, f"an answer nobody asked for: {message}"
            self.events.append(message)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.llm.close()


@pytest.fixture
def stdio(tmp_path):
    """Starts `gantry codewhale --stdio` whose model answers `steps`."""
    started = []

    def start(steps, version="0.8.59"):
        s = Stdio(tmp_path, steps, version)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
