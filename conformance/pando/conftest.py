"""Conformance of Gantry to the Pando instance protocol (seed 003), driven
by a client Gantry did not write: pyzmq (libzmq) as DEALER and SUB. Each
test starts `gantry serve --pando DIR ...`, finds the instance the way
Pando's clients do (DIR/.pando/ipc.lock, then the registry entry in
/tmp/pando-instances/), and speaks to it. The registry dir is shared by
the whole machine: the suite reads only its own instances' entries.

Run by crates/gantry-cli/tests/it/pando_conformance.rs, which passes the
binaries: GANTRY_BIN and GANTRY_MOCK_LLM.
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
import urllib.request

import pytest
import zmq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import HANG_GUARD, MockLlm, binary  # noqa: E402

REGISTRY = pathlib.Path("/tmp/pando-instances")
# Short, so a subscriber knows quickly that its subscription is live.
HEARTBEAT_MS = 200


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


def fnv32a(text):
    h = 0x811C9DC5
    for b in text.encode():
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def derived_ports(path):
    """(pub, rpc) as Pando derives them from a workspace path."""
    base = 40000 + fnv32a(path) % 20000
    return base, base + 1


class Lines:
    """stderr of a process, read from its descriptor (a buffered readline
    would hide lines it read ahead from select)."""

    def __init__(self, stream):
        self.fd = stream.fileno()
        self.text = ""

    def wait(self, pattern, count=1):
        """The first `count` matches of `pattern` among whole lines."""
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            matches = [m for m in (re.search(pattern, l) for l in self.text.split("\n")[:-1]) if m]
            if len(matches) >= count:
                return matches[:count]
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    break
                self.text += chunk.decode(errors="replace")
        raise AssertionError(f"gantry serve did not say {pattern!r}; it said: {self.text!r}")

    def rest(self):
        """Everything until the stream closes."""
        while True:
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return self.text
            self.text += chunk.decode(errors="replace")


class Serve:
    """`gantry serve --pando DIR ...`, its model scripted, its threads in
    memory or (`storage="file"`) in a SQLite file; with `http`, its HTTP
    API too, and a read-only token for it."""

    def __init__(self, tmp_path, steps, dirs, llm=None, storage="memory", http=False):
        self.llm = llm or MockLlm(steps, tmp_path)
        self.dirs = dirs
        self.http = http
        gantry = [binary("GANTRY_BIN"), "--config", str(write_config(tmp_path, self.llm))]
        if storage != "memory" or http:
            # A data dir of its own: the store's file, the API's tokens.
            gantry += ["--data-dir", str(tmp_path / "data")]
        self.token = None
        if http:
            made = subprocess.run(gantry + ["tokens", "create", "--name", "conformance", "--read-only"],
                                  capture_output=True, text=True, env=environment(tmp_path),
                                  timeout=HANG_GUARD, check=True)
            self.token = made.stdout.strip()
        args = gantry + ["serve", "--listen-addr", "127.0.0.1:0", "--storage-backend", storage,
                         "--pando-heartbeat-ms", str(HEARTBEAT_MS)]
        if http:
            args += ["--http-addr", "127.0.0.1:0"]
        for d in dirs:
            args += ["--pando", str(d)]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=environment(tmp_path))
        self.stderr = Lines(self.proc.stderr)
        self.http_url = None

    def started(self):
        self.stderr.wait(r"serving Pando instance (\S+) for (\S+)", len(self.dirs))
        if self.http:
            [m] = self.stderr.wait(r"serving the HTTP API and dashboard on (http://\S+)/")
            self.http_url = m.group(1)
        return self

    def get(self, path):
        """GET `path` of the HTTP API, with the token; its JSON."""
        request = urllib.request.Request(f"{self.http_url}{path}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as r:
            return json.load(r)

    def stop(self):
        """SIGTERM, as a service manager stops it; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
        return self.proc.returncode


class Instance:
    """One instance, found from its lock file and registry entry, with a
    DEALER and a SUB connected to it."""

    def __init__(self, ctx, workdir):
        self.workdir = pathlib.Path(workdir)
        self.lock_path = self.workdir / ".pando" / "ipc.lock"
        self.lock_text = self.lock_path.read_text()
        self.lock = json.loads(self.lock_text)
        self.entry_path = REGISTRY / f"{self.lock['instance_id']}.json"
        self.entry = json.loads(self.entry_path.read_text())
        self.id = self.lock["instance_id"]
        self.dealer = ctx.socket(zmq.DEALER)
        self.dealer.setsockopt(zmq.LINGER, 0)
        self.dealer.connect(f"tcp://127.0.0.1:{self.lock['rpc_port']}")
        self.sub = ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.connect(f"tcp://127.0.0.1:{self.lock['pub_port']}")
        self.next_id = 0
        # The subscription is live once a heartbeat arrives.
        self.topic("instance.heartbeat")

    def raw(self, *frames):
        """Sends `frames` as they are; the reply's frames."""
        self.dealer.send_multipart(list(frames))
        assert self.dealer.poll(int(HANG_GUARD * 1000)), "no reply came"
        return self.dealer.recv_multipart()

    def request(self, method, params=None, rid=None):
        """Calls `method`; the whole reply, as JSON."""
        if rid is None:
            self.next_id += 1
            rid = f"req-{self.next_id}"
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        frames = self.raw(b"", json.dumps(message).encode())
        assert frames[0] == b"" and len(frames) == 2, frames
        reply = json.loads(frames[1])
        assert reply["id"] == rid
        return reply

    def call(self, method, params=None):
        """Calls `method`; its result (which must not be an error)."""
        reply = self.request(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    def error(self, method, params=None):
        """Calls `method`, which must fail; (code, message)."""
        reply = self.request(method, params)
        assert "result" not in reply, reply
        assert set(reply["error"]) == {"code", "message"}, reply
        return reply["error"]["code"], reply["error"]["message"]

    def next_topic(self):
        """The next PUB message: (topic, envelope), from its ONE frame."""
        assert self.sub.poll(int(HANG_GUARD * 1000)), "no PUB message came"
        frames = self.sub.recv_multipart()
        assert len(frames) == 1, frames
        topic, nul, body = frames[0].partition(b"\x00")
        assert nul, frames[0]
        envelope = json.loads(body)
        assert envelope["topic"] == topic.decode()
        assert envelope["instanceId"] == self.id
        assert envelope["projectId"] == ""
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", envelope["timestamp"])
        return topic.decode(), envelope

    def until(self, topic, keep_heartbeats=False):
        """Envelopes up to and including the first on `topic`."""
        seen = []
        while True:
            t, envelope = self.next_topic()
            if t == topic or keep_heartbeats or t != "instance.heartbeat":
                seen.append((t, envelope))
            if t == topic:
                return seen

    def topic(self, topic):
        """The payload of the next message on `topic`."""
        return self.until(topic)[-1][1]["payload"]

    def close(self):
        self.dealer.close()
        self.sub.close()


@pytest.fixture
def pando(tmp_path):
    """`pando(steps, n=1, **options)`: `gantry serve` over n fresh
    workspace dirs (options: see Serve); returns (serve, [Instance, ...])."""
    ctx = zmq.Context()
    started = []
    clients = []

    def start(steps, n=1, **options):
        dirs = []
        for i in range(n):
            d = tmp_path / f"ws{len(started)}-{i}"
            d.mkdir()
            dirs.append(d)
        serve = Serve(tmp_path, steps, dirs, **options).started()
        started.append(serve)
        instances = [Instance(ctx, d) for d in dirs]
        clients.extend(instances)
        return serve, instances

    start.ctx = ctx
    start.tmp_path = tmp_path
    yield start
    for c in clients:
        c.close()
    for s in started:
        s.stop()
        s.llm.close()
    ctx.term()
