"""Conformance of `gantry serve` to a3s.code.agent.v1.CodeAgentService, driven
by a client Gantry did not write: Python grpcio with stubs generated from the
seed's proto at test time.

Run by crates/gantry-cli/tests/a3s_conformance.rs, which passes the binaries:
GANTRY_BIN (the gantry binary) and GANTRY_MOCK_LLM (the scripted mock LLM).
"""

import importlib
import os
import pathlib
import signal
import subprocess
import sys

import grpc
import pytest
from grpc_tools import protoc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import HANG_GUARD, MockLlm, binary, read_line  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "crates" / "proto-code-agent" / "proto"
PROTO = "a3s/code/agent/v1/code_agent.proto"


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

    def __init__(self, pb, tmp_path, extra_args=(), listen="127.0.0.1:0"):
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
                binary("GANTRY_BIN"),
                "serve",
                "--listen-addr",
                listen,
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
        self.addr = read_line(
            self.proc.stderr, r"serving a3s\.code\.agent\.v1\.CodeAgentService on (\S+)", "gantry serve"
        ).group(1)
        # Over a Unix socket grpc-js (A3S's SDK) sends `:authority:
        # localhost`; grpcio would send the socket's path, which is no valid
        # HTTP/2 authority, so it is told to do what grpc-js does.
        options = [("grpc.default_authority", "localhost")] if self.addr.startswith("unix:") else []
        self.channel = grpc.insecure_channel(self.addr, options=options)
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


@pytest.fixture
def full_access_gantry(pb, tmp_path):
    """`gantry serve --max-sandbox danger-full-access`: only such a server
    lets a client have it run commands outside the sandbox (MCP stdio
    servers, scheduled commands)."""
    server = Gantry(pb, tmp_path, extra_args=("--max-sandbox", "danger-full-access"))
    yield server
    server.stop()


def code_of(call):
    """The status code a failing call raised."""
    with pytest.raises(grpc.RpcError) as failure:
        call()
    return failure.value.code(), failure.value.details()
