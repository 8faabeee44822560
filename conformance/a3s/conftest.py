"""Conformance of `gantry serve` to a3s.code.agent.v1.CodeAgentService, driven
by a client Gantry did not write: Python grpcio with stubs generated from the
seed's proto at test time.

Run by crates/gantry-cli/tests/a3s_conformance.rs, which passes the binaries:
GANTRY_BIN (the gantry binary) and GANTRY_MOCK_LLM (the scripted mock LLM).
"""

import importlib
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

import grpc
import pytest
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "crates" / "proto-code-agent" / "proto"
PROTO = "a3s/code/agent/v1/code_agent.proto"
# Fails a wait that would otherwise hang the suite.
HANG_GUARD = 30.0


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    """The generated messages (`pb`) and stubs (`pb.grpc`)."""
    out = tmp_path_factory.mktemp("stubs")
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(PROTO_DIR / PROTO),
        ]
    )
    assert code == 0, "protoc failed on the seed's proto"
    sys.path.insert(0, str(out))
    messages = importlib.import_module("a3s.code.agent.v1.code_agent_pb2")
    messages.grpc = importlib.import_module("a3s.code.agent.v1.code_agent_pb2_grpc")
    return messages


def _binary(var):
    path = os.environ.get(var)
    if not path:
        pytest.exit(f"{var} is not set: run through cargo (tests/a3s_conformance.rs)", 2)
    return path


def _read_line(stream, pattern, what):
    """The first match of `pattern` in the lines of `stream`, within HANG_GUARD."""
    deadline = time.monotonic() + HANG_GUARD
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if not ready:
            continue
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    raise AssertionError(f"{what} did not start; it said: {''.join(seen)!r}")


class MockLlm:
    """The scripted mock LLM server, one step per model request."""

    def __init__(self, steps, tmp_path):
        script = tmp_path / f"script-{id(self)}.json"
        script.write_text(json.dumps({"steps": steps}))
        self.proc = subprocess.Popen(
            [_binary("GANTRY_MOCK_LLM"), "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = _read_line(self.proc.stdout, r"(http://\S+)", "the mock LLM").group(1)
        # A3S clients give the base URL without the `/v1`.
        self.root_url = self.base_url.removesuffix("/v1")

    def requests(self):
        """What the model server received: [{path, headers, body}]."""
        with urllib.request.urlopen(f"{self.root_url}/_mock/requests", timeout=HANG_GUARD) as r:
            return json.load(r)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=HANG_GUARD)


@pytest.fixture
def mock_llm(tmp_path):
    """Starts mock LLM servers: `mock_llm([{"reply": {"text": "hi"}}])`."""
    started = []

    def start(steps):
        llm = MockLlm(steps, tmp_path)
        started.append(llm)
        return llm

    yield start
    for llm in started:
        llm.close()


class Gantry:
    """A `gantry serve` process and a stub connected to it."""

    def __init__(self, pb, tmp_path, extra_args=()):
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            # A bare home: no user config, skills or login profile leak in.
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
        }
        self.proc = subprocess.Popen(
            [
                _binary("GANTRY_BIN"),
                "serve",
                "--listen-addr",
                "127.0.0.1:0",
                "--workspace",
                str(self.workspace),
                "--storage-backend",
                "memory",
                *extra_args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.addr = _read_line(
            self.proc.stderr, r"serving a3s\.code\.agent\.v1\.CodeAgentService on (\S+)", "gantry serve"
        ).group(1)
        self.channel = grpc.insecure_channel(self.addr)
        grpc.channel_ready_future(self.channel).result(timeout=HANG_GUARD)
        self.stub = pb.grpc.CodeAgentServiceStub(self.channel)
        self.pb = pb

    def llm_config(self, llm, **overrides):
        """An LLMConfig reaching `llm` as an OpenAI-compatible server."""
        fields = dict(provider="openai", model="gpt-4.1-mini", api_key="sk-test", base_url=llm.root_url)
        fields.update(overrides)
        return self.pb.LLMConfig(**fields)

    def session(self, llm, **config):
        """A new session whose model is `llm`; its id."""
        request = self.pb.CreateSessionRequest(
            config=self.pb.SessionConfig(llm=self.llm_config(llm), **config)
        )
        return self.stub.CreateSession(request, timeout=HANG_GUARD).session_id

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise


@pytest.fixture
def gantry(pb, tmp_path):
    """A fresh `gantry serve` on an ephemeral port."""
    server = Gantry(pb, tmp_path)
    yield server
    server.stop()


def code_of(call):
    """The status code a failing call raised."""
    with pytest.raises(grpc.RpcError) as failure:
        call()
    return failure.value.code(), failure.value.details()
