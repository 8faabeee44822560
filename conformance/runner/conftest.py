"""Conformance of `gantry runner` to companyhelm.runner.v1, driven by a
control plane Gantry did not write: a Python grpcio server built from the
protos in the repo (stubs generated at test time), started by each test on
127.0.0.1:0, with `gantry runner` dialing it. It speaks 0.2.0 (`pb`) or
0.7.0 (`pb7`), as the test asks; `v0_7_runner.py` is the other way round,
a runner of 0.7.0's that behaves as CompanyHelm's, under `gantry
control-plane serve`.

Run by crates/gantry-cli/tests/runner_conformance.rs, which passes the
binaries: GANTRY_BIN (the gantry binary) and GANTRY_MOCK_LLM (the scripted
mock LLM).
"""

import importlib
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_tools import protoc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import HANG_GUARD, MockLlm, binary, read_line  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "crates" / "gantry-runner-protocol" / "proto"
RUNNER_PROTO = "companyhelm/runner/v1/runner.proto"
SERVICE = "companyhelm.runner.v1.AgentRunnerControlService"
# The token the control plane knows this runner by.
TOKEN = "runner-secret-1"
# The models the runner's config file serves; the first is the default.
MODELS = ["gpt-4.1", "o4-mini"]
# A command that runs until the test creates `release` in the thread's
# workspace (`Runner.release`): a file, so nothing blocks on the test's side.
BLOCKED = "echo waiting; while [ ! -e release ]; do sleep 0.05; done; echo released"


def _generate(out, includes, protos):
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    args = ["grpc_tools.protoc", *[f"-I{i}" for i in includes], f"-I{include}", f"--python_out={out}"]
    code = protoc.main(args + protos)
    assert code == 0, f"protoc failed on {protos}"


@pytest.fixture(scope="session")
def stubs(tmp_path_factory):
    """Where the generated modules are (on sys.path), with validate.proto's."""
    out = tmp_path_factory.mktemp("stubs")
    shared = PROTO_DIR / "shared"
    _generate(out, [shared], [str(shared / "buf/validate/validate.proto")])
    sys.path.insert(0, str(out))
    return out


@pytest.fixture(scope="session")
def pb(stubs):
    """The generated messages of the 0.2.0 runner.proto."""
    _generate(stubs, [PROTO_DIR / "v0_2", PROTO_DIR / "shared"], [str(PROTO_DIR / "v0_2" / RUNNER_PROTO)])
    return importlib.import_module("companyhelm.runner.v1.runner_pb2")


@pytest.fixture(scope="session")
def pb7(stubs, tmp_path_factory):
    """The generated messages of the 0.7.0 runner.proto. Both versions name
    their messages alike, which one Python process cannot hold: these get
    the package `companyhelm_v0_7` instead. A message's package is not on
    the wire; the service's is, and the servers and clients here give its
    path by hand (SERVICE)."""
    src = tmp_path_factory.mktemp("proto_v0_7")
    text = (PROTO_DIR / "v0_7" / RUNNER_PROTO).read_text()
    assert "package companyhelm.runner.v1;" in text
    (src / "companyhelm_v0_7").mkdir()
    (src / "companyhelm_v0_7" / "runner.proto").write_text(
        text.replace("package companyhelm.runner.v1;", "package companyhelm_v0_7;")
    )
    _generate(stubs, [src, PROTO_DIR / "shared"], [str(src / "companyhelm_v0_7" / "runner.proto")])
    return importlib.import_module("companyhelm_v0_7.runner_pb2")



# ---------------------------------------------------------------- the wire


def rule_violations(message, path=""):
    """Where `message` breaks the buf.validate rules of its proto (the kinds
    runner.proto uses: string.min_len, int64.gte, repeated.items)."""
    validate = importlib.import_module("buf.validate.validate_pb2")
    found = []
    for field in message.DESCRIPTOR.fields:
        name = f"{path}{field.name}"
        repeated = field.is_repeated
        # Rules apply to a field with presence only when it is set.
        if not repeated and field.has_presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        options = field.GetOptions()
        rules = options.Extensions[validate.field] if options.HasExtension(validate.field) else None
        if rules is not None and repeated and rules.HasField("repeated"):
            rules, values = rules.repeated.items, list(value)
        else:
            values = list(value) if repeated else [value]
        for one in values:
            if field.message_type is not None:
                found += rule_violations(one, f"{name}.")
            elif rules is not None and rules.HasField("string") and len(one) < rules.string.min_len:
                found.append(f"{name}: shorter than {rules.string.min_len}")
            elif rules is not None and rules.HasField("int64") and one < rules.int64.gte:
                found.append(f"{name}: below {rules.int64.gte}")
    return found


def _enum_name(body, field):
    value = getattr(body, field)
    known = body.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number.get(value)
    # An open enum keeps values the proto does not name: show the number.
    return known.name if known else f"{field}={value}"


def status_name(body):
    """The name of an update's status, e.g. `ITEM_STATUS_COMPLETED`."""
    return _enum_name(body, "status")


def describe(message):
    """One line on a runner message: what it says and the request it answers,
    e.g. `thread t1 THREAD_STATUS_READY [r2]`."""
    kind = message.WhichOneof("payload")
    body = getattr(message, kind) if kind else None
    if kind == "request_error":
        text = f"error: {body.error_message}"
    elif kind == "agent_update":
        text = f"agent {body.agent_id} {status_name(body)}"
    elif kind == "thread_update":
        text = f"thread {body.thread_id} {status_name(body)}"
    elif kind == "turn_update":
        text = f"turn {status_name(body)}"
    elif kind == "item_update":
        text = f"{_enum_name(body, 'item_type')} {status_name(body)}"
    elif kind == "skill_mp_update":
        text = f"skill {body.package_name} {status_name(body)}"
    elif kind == "heartbeat_response":
        text = "heartbeat"
    elif kind == "thread_name_update":
        text = f"thread {body.thread_id} named {body.thread_name!r}"
    elif kind == "thread_token_usage_update":
        text = f"usage {body.thread_id}"
    elif kind == "agent_sdk_update":
        text = f"sdk {body.name} {_enum_name(body, 'status')}"
    else:
        text = "empty"
    request = message.request_id if message.HasField("request_id") else "-"
    return f"{text} [{request}]"


def is_turn_completed(message):
    """Whether `message` says a turn completed."""
    return (
        message.WhichOneof("payload") == "turn_update" and status_name(message.turn_update) == "TURN_STATUS_COMPLETED"
    )


def answers(request_id):
    """A predicate: the message answers `request_id`."""
    return lambda message: message.HasField("request_id") and message.request_id == request_id


def items(messages):
    """The ItemUpdates among `messages`."""
    return [m.item_update for m in messages if m.WhichOneof("payload") == "item_update"]


# ------------------------------------------------------- the control plane

_END = object()


class Channel:
    """One open ControlChannel, from the control plane's side."""

    def __init__(self, pb, context):
        self._pb = pb
        self._context = context
        self._outgoing = queue.Queue()
        self._incoming = queue.Queue()
        self.log = []  # every message the runner sent on this channel

    def send(self, request_id, **request):
        """Sends a request, e.g. `send("r1", create_agent_request={...})`
        (`None`: without a request id, as a 0.2.0 control plane does)."""
        self._outgoing.put(self._pb.ServerMessage(request_id=request_id, **request))

    def abort(self, code=grpc.StatusCode.UNAVAILABLE, details="control plane going away"):
        """Breaks the channel from the control plane's side."""
        self._outgoing.put((code, details))

    def next(self):
        """The runner's next message, checked against the proto's rules."""
        try:
            message = self._incoming.get(timeout=HANG_GUARD)
        except queue.Empty:
            raise AssertionError(f"the runner said nothing more; it said: {[describe(m) for m in self.log]}") from None
        if message is _END:
            raise AssertionError(f"the channel closed; the runner said: {[describe(m) for m in self.log]}")
        self.log.append(message)
        assert message.WhichOneof("payload"), f"a message without a payload: {message}"
        broken = rule_violations(message)
        assert not broken, f"{describe(message)} breaks runner.proto's rules: {broken}"
        return message

    def until(self, done):
        """The runner's messages up to the first for which `done` holds (included)."""
        seen = []
        while not seen or not done(seen[-1]):
            seen.append(self.next())
        return seen

    def until_said(self, *lines):
        """The runner's messages until it said each of `lines` (as `describe`
        puts them), in any order."""
        missing = set(lines)
        seen = []
        while missing:
            seen.append(self.next())
            missing.discard(describe(seen[-1]))
        return seen

    def reply(self, request_id):
        """The runner's first (next) message answering `request_id`."""
        return self.until(answers(request_id))[-1]

    # The server's side, called by ControlPlane.

    def _read(self, requests):
        try:
            for message in requests:
                self._incoming.put(message)
        except grpc.RpcError:  # the rpc ended: a cancelled read raises
            pass
        self._incoming.put(_END)

    def _responses(self):
        while True:
            item = self._outgoing.get()
            if item is _END:
                return
            if isinstance(item, tuple):
                self._context.abort(*item)
            yield item

    def _ended(self):
        self._outgoing.put(_END)


class ControlPlane:
    """A control plane on 127.0.0.1 (served under `/PREFIX/` when given):
    records registrations and GitHub calls, hands each opened control
    channel to the test, and answers the GitHub rpcs from `github`."""

    def __init__(self, pb, prefix="", token=TOKEN):
        self.pb = pb
        # 0.7.0 has no GitHub rpcs.
        self.has_github = hasattr(pb, "ListGithubInstallationsForRunnerRequest")
        self.prefix = prefix
        self.token = token
        self.github = {}  # installation id -> access token
        self.calls = []  # unary calls: (rpc, authorization, request)
        self.broken = []  # where the runner's calls broke the proto's rules
        self._channels = queue.Queue()
        self.port = 0
        self._server = None
        self.start()

    @property
    def registrations(self):
        """Every RegisterRunner call: (authorization, request)."""
        return [(auth, request) for rpc, auth, request in self.calls if rpc == "RegisterRunner"]

    @property
    def github_calls(self):
        """Every call of the GitHub rpcs: (rpc, authorization, request)."""
        return [call for call in self.calls if call[0] != "RegisterRunner"]

    @property
    def url(self):
        """The URL a runner dials."""
        return f"http://127.0.0.1:{self.port}" + (f"/{self.prefix}" if self.prefix else "")

    def start(self):
        """Serves (on the same port as before, after a stop)."""
        pb = self.pb
        handlers = {
            "RegisterRunner": grpc.unary_unary_rpc_method_handler(
                self._register, pb.RegisterRunnerRequest.FromString, pb.RegisterRunnerResponse.SerializeToString
            ),
            "ControlChannel": grpc.stream_stream_rpc_method_handler(
                self._control_channel, pb.ClientMessage.FromString, pb.ServerMessage.SerializeToString
            ),
        }
        if self.has_github:
            handlers |= self._github_handlers()
        # grpcio routes `/{service}/{method}`: a prefixed service name serves
        # `/PREFIX/companyhelm.runner.v1.AgentRunnerControlService/...` only.
        service = f"{self.prefix}/{SERVICE}" if self.prefix else SERVICE
        server = grpc.server(ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        assert port, f"cannot listen on 127.0.0.1:{self.port}"
        self.port = port
        server.start()
        self._server = server

    def _github_handlers(self):
        pb = self.pb
        return {
            "ListGithubInstallationsForRunner": grpc.unary_unary_rpc_method_handler(
                self._list_installations,
                pb.ListGithubInstallationsForRunnerRequest.FromString,
                pb.ListGithubInstallationsForRunnerResponse.SerializeToString,
            ),
            "GetGithubInstallationAccessTokenForRunner": grpc.unary_unary_rpc_method_handler(
                self._installation_token,
                pb.GetGithubInstallationAccessTokenForRunnerRequest.FromString,
                pb.GetGithubInstallationAccessTokenForRunnerResponse.SerializeToString,
            ),
        }

    def stop(self):
        """Stops serving, ending every open rpc."""
        if self._server is not None:
            self._server.stop(grace=None).wait(HANG_GUARD)
            self._server = None

    def accept(self):
        """The next control channel a runner opens."""
        try:
            return self._channels.get(timeout=HANG_GUARD)
        except queue.Empty:
            raise AssertionError(f"no runner opened a control channel; registrations: {self.registrations}") from None

    def opened_channels(self):
        """How many control channels were opened and not yet accepted."""
        return self._channels.qsize()

    def _authorization(self, context):
        return dict(context.invocation_metadata()).get("authorization")

    def _check(self, context):
        if self._authorization(context) != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown runner token")

    def _received(self, rpc, request, context):
        """Records a unary call, checks it against the proto's rules, then
        refuses it unless it carries the runner's token."""
        self.calls.append((rpc, self._authorization(context), request))
        self.broken += [f"{rpc}: {violation}" for violation in rule_violations(request)]
        self._check(context)

    def _register(self, request, context):
        self._received("RegisterRunner", request, context)
        return self.pb.RegisterRunnerResponse()

    def _control_channel(self, requests, context):
        self._check(context)
        channel = Channel(self.pb, context)
        context.add_callback(channel._ended)
        # The runner counts the channel open once headers arrive; grpcio
        # would hold them back until the first message.
        context.send_initial_metadata(())
        threading.Thread(target=channel._read, args=(requests,), daemon=True).start()
        self._channels.put(channel)
        yield from channel._responses()

    def _list_installations(self, request, context):
        self._received("ListGithubInstallationsForRunner", request, context)
        installations = [self.pb.GithubInstallationForRunner(installation_id=i) for i in self.github]
        return self.pb.ListGithubInstallationsForRunnerResponse(installations=installations)

    def _installation_token(self, request, context):
        self._received("GetGithubInstallationAccessTokenForRunner", request, context)
        token = self.github.get(request.installation_id)
        if token is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "no such installation")
        return self.pb.GetGithubInstallationAccessTokenForRunnerResponse(
            installation_id=request.installation_id,
            access_token=token,
            access_token_expires_unix_time_ms=int(time.time() * 1000) + 3_600_000,
            repositories=["acme/widgets"],
        )


# ---------------------------------------------------------------- processes



class Runner:
    """A `gantry runner` process dialing `url`, with a bare HOME, its own
    data dir, workspaces dir, token file and a config serving `llm`."""

    def __init__(self, tmp_path, url, token, llm, protocol="0.2"):
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        self.data_dir = tmp_path / "data"
        self.workspaces = tmp_path / "workspaces"
        token_file = tmp_path / "runner.token"
        token_file.write_text(f"{token}\n")
        config = tmp_path / "config.toml"
        config.write_text(
            f'default_model = "mock/{MODELS[0]}"\n'
            "[providers.mock]\n"
            'kind = "openai-chat"\n'
            f"base_url = {json.dumps(llm.base_url)}\n"
            'api_key = "sk-test"\n'
            f"models = {json.dumps(MODELS)}\n"
        )
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
                "runner",
                "--control-plane",
                url,
                "--token-file",
                str(token_file),
                "--workspaces",
                str(self.workspaces),
                "--data-dir",
                str(self.data_dir),
                "--config",
                str(config),
                "--protocol",
                protocol,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            first = read_line(self.proc.stderr, r"gantry: runner dialing .*", "gantry runner")
        except AssertionError:
            self.proc.kill()
            self.proc.wait()
            raise
        self._stderr = [first.group(0)]
        self._said = threading.Condition()
        # Drained all along, so a chatty runner never blocks on a full pipe.
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()

    def _drain_stderr(self):
        for line in self.proc.stderr:
            with self._said:
                self._stderr.append(line.rstrip("\n"))
                self._said.notify_all()

    def wait_stderr(self, needle):
        """Waits until the runner's stderr holds `needle` (each line is a
        signal: no polling); what it said so far."""
        deadline = time.monotonic() + HANG_GUARD
        with self._said:
            while needle not in self.stderr():
                left = deadline - time.monotonic()
                assert left > 0, f"the runner never said {needle!r}; it said:\n{self.stderr()}"
                self._said.wait(left)
            return self.stderr()

    def stderr(self):
        """What the runner said on stderr so far."""
        return "\n".join(self._stderr)

    def workspace(self, thread_id):
        """The directory a thread works in."""
        return self.workspaces / thread_id

    def release(self, thread_id):
        """Lets the thread's BLOCKED command finish."""
        (self.workspace(thread_id) / "release").touch()

    def wait_exit(self):
        """Waits for the runner to exit on its own: its exit code and stderr."""
        code = self.proc.wait(timeout=HANG_GUARD)
        self._drain.join(HANG_GUARD)
        return code, self.stderr()

    def stop(self):
        """Stops the runner as a service manager would (SIGTERM)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
        self._drain.join(HANG_GUARD)


class Rig:
    """A control plane, a mock model and a runner dialing the one, served by the other."""

    def __init__(self, plane, llm, runner):
        self.plane = plane
        self.llm = llm
        self.runner = runner

    def agent_and_thread(self, channel, **thread):
        """Creates agent `a1` and a thread under it; the thread's id."""
        channel.send("agent-1", create_agent_request={"agent_id": "a1", "agent_sdk": "gantry"})
        assert describe(channel.reply("agent-1")) == "agent a1 AGENT_STATUS_READY [agent-1]"
        thread = {"agent_id": "a1", "model": f"mock/{MODELS[0]}", **thread}
        channel.send("thread-1", create_thread_request=thread)
        reply = channel.reply("thread-1")
        assert reply.WhichOneof("payload") == "thread_update", describe(reply)
        assert reply.thread_update.status == self.plane.pb.THREAD_STATUS_READY, describe(reply)
        return reply.thread_update.thread_id

    def thread_v0_7(self, channel, thread_id="t-1", **fields):
        """Creates thread `thread_id` as a 0.7.0 control plane does (it picks
        the id; the thread gets a CLI secret); returns the id."""
        thread = {"thread_id": thread_id, "model": f"mock/{MODELS[0]}", "cli_secret": "cli-secret-1", **fields}
        channel.send(f"create-{thread_id}", create_thread_request=thread)
        assert describe(channel.reply(f"create-{thread_id}")) == (
            f"thread {thread_id} THREAD_STATUS_READY [create-{thread_id}]"
        )
        return thread_id


@pytest.fixture
def start_runner(pb, pb7, tmp_path):
    """Starts a control plane, a mock model with `steps` and a runner:
    `start_runner([{"reply": {"text": "hi"}}], prefix="cp", token=...,
    protocol="0.7")`; `plane="0.7"` serves a runner of another version
    with a control plane of 0.7.0's."""
    planes, llms, runners = [], [], []

    def start(steps=(), prefix="", token=TOKEN, protocol="0.2", plane=None):
        plane = ControlPlane(pb7 if (plane or protocol) == "0.7" else pb, prefix=prefix)
        planes.append(plane)
        llm = MockLlm(list(steps), tmp_path)
        llms.append(llm)
        runner = Runner(tmp_path, plane.url, token, llm, protocol=protocol)
        runners.append(runner)
        return Rig(plane, llm, runner)

    yield start
    for runner in runners:
        runner.stop()
        # Shown by pytest when the test failed.
        print(f"gantry runner said:\n{runner.stderr()}")
    for plane in planes:
        plane.stop()
    for llm in llms:
        llm.close()
    for plane in planes:
        assert not plane.broken, f"the runner's calls broke runner.proto's rules: {plane.broken}"


def shell(command, text=""):
    """A model step calling the shell tool with `command`."""
    return {"reply": {"text": text, "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}}


def reply(text):
    """A model step answering `text`."""
    return {"reply": {"text": text}}


def user_message(thread_id, text, agent_id="a1", **fields):
    """A CreateUserMessageRequest (as a dict for `Channel.send`)."""
    return {"agent_id": agent_id, "thread_id": thread_id, "text": text, **fields}
