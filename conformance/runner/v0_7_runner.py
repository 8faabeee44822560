"""A runner of companyhelm.runner.v1 0.7.0 that behaves as CompanyHelm's
(`companyhelm-runner` v0.3.0) does, for `gantry control-plane serve`: a
grpcio client built from the 0.7.0 proto (the `pb7` stubs). It registers
its SDKs with their status, answers heartbeats echoing their id, takes the
thread ids the control plane picks, runs a turn as that runner reports one
(recorded/companyhelm-runner-v0.3.0.json, derived from its source: turn
running, then items, each model response's token usage and the thread's
name without a request id, turn completed), answers an interrupt only with
the end of the turn (never by the interrupt's id) and leaves the cut
message running, ends a failed turn with a RequestError alone, and ignores
requests it does not know.

Also the control plane as a process and its HTTP API, over urllib."""

import json
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request

import grpc

from harness import HANG_GUARD, binary, read_line

PATH = "/companyhelm.runner.v1.AgentRunnerControlService/"


class CompanyHelmRunner:
    """Dials `grpc_addr` with `token`; `sdks` as (name, [models], status)."""

    def __init__(self, pb7, grpc_addr, token, sdks=(("codex", ["gpt-5"], "READY"),)):
        self.pb = pb7
        self.received = []  # every ServerMessage, in order
        self.threads = {}  # thread id -> its CreateThreadRequest
        self.heartbeats = 0
        self.answer_heartbeats = threading.Event()
        self.answer_heartbeats.set()
        self._blocked = {}  # thread id -> (request id, turn id, event to end the turn)
        self._out = queue.Queue()
        self._seen = threading.Condition()
        self._channel = grpc.insecure_channel(grpc_addr)
        metadata = (("authorization", f"Bearer {token}"),)
        register = self._channel.unary_unary(
            PATH + "RegisterRunner",
            request_serializer=pb7.RegisterRunnerRequest.SerializeToString,
            response_deserializer=pb7.RegisterRunnerResponse.FromString,
        )
        register(self._registration(sdks), metadata=metadata, timeout=HANG_GUARD)
        open_channel = self._channel.stream_stream(
            PATH + "ControlChannel",
            request_serializer=pb7.ClientMessage.SerializeToString,
            response_deserializer=pb7.ServerMessage.FromString,
        )
        self._call = open_channel(iter(self._out.get, None), metadata=metadata)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _registration(self, sdks):
        pb = self.pb
        return pb.RegisterRunnerRequest(
            agent_sdks=[
                pb.AgentSdk(
                    name=name,
                    models=[pb.LLMModel(name=m, reasoning=["low", "high"]) for m in models],
                    status=getattr(pb, f"AGENT_SDK_STATUS_{status}"),
                )
                for name, models, status in sdks
            ]
        )

    def close(self):
        self._out.put(None)
        for _, _, end in self._blocked.values():
            end.set()
        self._call.cancel()
        self._channel.close()

    # ------------------------------------------------------------ what it says

    def send(self, request_id=None, **payload):
        message = self.pb.ClientMessage(**payload)
        if request_id is not None:
            message.request_id = request_id
        self._out.put(message)

    def sdk_update(self, name, models, status, error=None):
        """Says an SDK changed (`AgentSdk` update), as after a login or a failure."""
        pb = self.pb
        sdk = pb.AgentSdk(
            name=name,
            models=[pb.LLMModel(name=m) for m in models],
            status=getattr(pb, f"AGENT_SDK_STATUS_{status}"),
        )
        if error:
            sdk.error_message = error
        self.send(agent_sdk_update=sdk)

    def wait_for(self, what, predicate):
        """The first message received for which `predicate` holds."""
        deadline = time.monotonic() + HANG_GUARD
        with self._seen:
            while True:
                for message in self.received:
                    if predicate(message):
                        return message
                left = deadline - time.monotonic()
                assert left > 0, f"the control plane never sent {what}; it sent {[m.WhichOneof('request') for m in self.received]}"
                self._seen.wait(left)

    def kinds(self):
        return [m.WhichOneof("request") for m in self.received]

    # ------------------------------------------------------------ what it does

    def _read(self):
        try:
            for message in self._call:
                with self._seen:
                    self.received.append(message)
                    self._seen.notify_all()
                self._handle(message)
        except grpc.RpcError:
            pass

    def _handle(self, message):
        pb = self.pb
        kind = message.WhichOneof("request")
        rid = message.request_id
        if kind == "heartbeat_request":
            if self.answer_heartbeats.is_set():
                self.heartbeats += 1
                self.send(rid, heartbeat_response=pb.HeartbeatResponse())
        elif kind == "create_thread_request":
            request = message.create_thread_request
            self.threads[request.thread_id] = request
            self.send(rid, thread_update=pb.ThreadUpdate(thread_id=request.thread_id, status=pb.THREAD_STATUS_READY))
        elif kind == "delete_thread_request":
            thread = message.delete_thread_request.thread_id
            self.threads.pop(thread, None)
            self.send(rid, thread_update=pb.ThreadUpdate(thread_id=thread, status=pb.THREAD_STATUS_DELETED))
        elif kind == "create_user_message_request":
            threading.Thread(target=self._turn, args=(rid, message.create_user_message_request), daemon=True).start()
        elif kind == "interrupt_turn_request":
            # CompanyHelm's runner asks its SDK to stop and says nothing to the
            # interrupt itself: the turn's end is the answer.
            blocked = self._blocked.get(message.interrupt_turn_request.thread_id)
            if blocked:
                blocked[2].set()
        # Anything else is ignored without a reply, as CompanyHelm's runner does.

    def _turn(self, rid, request):
        pb = self.pb
        thread = request.thread_id
        if thread not in self.threads:
            self.send(rid, request_error=pb.RequestError(error_message=f"Thread '{thread}' does not exist."))
            return
        turn = f"turn-{rid}"

        def item(item_id, status, item_type, text=None, command=None):
            update = pb.ItemUpdate(
                sdk_item_id=item_id, status=status, item_type=item_type, thread_id=thread, sdk_turn_id=turn
            )
            if text is not None:
                update.text = text
            if command is not None:
                update.command_execution_item.CopyFrom(command)
            self.send(rid, item_update=update)

        running, completed = pb.ITEM_STATUS_RUNNING, pb.ITEM_STATUS_COMPLETED

        def usage(last, total):
            # Per model response, no request id (recorded/: usage).
            self.send(
                thread_token_usage_update=pb.ThreadTokenUsageUpdate(
                    thread_id=thread,
                    sdk_turn_id=turn,
                    total_usage=pb.TokenUsageBreakdown(input_tokens=total - 30, output_tokens=30, total_tokens=total),
                    last_usage=pb.TokenUsageBreakdown(input_tokens=last - 30, output_tokens=30, total_tokens=last),
                    model_context_window=200000,
                )
            )

        def end():
            # The thread's preview as its name, then the turn's end, under
            # the message's request id.
            self.send(thread_name_update=pb.ThreadNameUpdate(thread_id=thread, thread_name="Workspace listing"))
            self.send(rid, turn_update=pb.TurnUpdate(sdk_turn_id=turn, status=pb.TURN_STATUS_COMPLETED, thread_id=thread))

        self.send(rid, turn_update=pb.TurnUpdate(sdk_turn_id=turn, status=pb.TURN_STATUS_RUNNING, thread_id=thread))
        item(f"{turn}-u", running, pb.USER_MESSAGE, request.text)
        item(f"{turn}-u", completed, pb.USER_MESSAGE, request.text)
        if request.text == "block":
            # Interrupted mid-answer: codex never ends the cut message.
            item(f"{turn}-a", running, pb.AGENT_MESSAGE, "Agent message")
            done = threading.Event()
            self._blocked[thread] = (rid, turn, done)
            done.wait(HANG_GUARD)
            self._blocked.pop(thread, None)
            end()
            return
        if request.text == "fail":
            # codex's `error` notification: a RequestError under the
            # message's request id, and no turn completed, no name.
            item(f"{turn}-a", running, pb.AGENT_MESSAGE, "Agent message")
            self.send(rid, request_error=pb.RequestError(error_message="stream disconnected before completion"))
            return
        usage(120, 120)
        cmd = pb.CommandExecutionItem(command="ls -la", cwd="/workspace", process_id="42")
        item(f"{turn}-c", running, pb.COMMAND_EXECUTION, "ls -la", cmd)
        cmd.output = "total 0\n"
        item(f"{turn}-c", completed, pb.COMMAND_EXECUTION, "ls -la", cmd)
        item(f"{turn}-f", running, pb.FILE_CHANGE, "File change (inProgress): 1 file (README.md)")
        item(f"{turn}-f", completed, pb.FILE_CHANGE, "File change (completed): 1 file (README.md)")
        item(f"{turn}-a", running, pb.AGENT_MESSAGE, "Agent message")
        item(f"{turn}-a", completed, pb.AGENT_MESSAGE, "Listed the workspace.")
        usage(150, 270)
        end()


class ControlPlaneProcess:
    """`gantry control-plane serve` on ephemeral ports, with its own data dir."""

    def __init__(self, tmp_path, *extra):
        self.data_dir = tmp_path / "cp-data"
        self.home = tmp_path / "cp-home"
        self.home.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [
                binary("GANTRY_BIN"),
                "control-plane",
                "serve",
                "--grpc-listen",
                "127.0.0.1:0",
                "--http-listen",
                "127.0.0.1:0",
                "--data-dir",
                str(self.data_dir),
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self._env(),
        )
        line = read_line(self.proc.stderr, r"gRPC on (\S+), HTTP on (\S+)", "gantry control-plane serve")
        self.grpc, self.http = line.group(1), line.group(2)
        self._stderr = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _env(self):
        import os

        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "GANTRY_LOG": "info"}

    def _drain(self):
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip("\n"))

    def stderr(self):
        return "\n".join(self._stderr)

    def add_runner(self, name, *extra):
        """Adds a runner (while serving: the store is shared); its token."""
        out = subprocess.run(
            [binary("GANTRY_BIN"), "control-plane", "add-runner", name, "--data-dir", str(self.data_dir), *extra],
            capture_output=True,
            text=True,
            env=self._env(),
            timeout=HANG_GUARD,
            check=True,
        )
        return out.stdout.strip()

    def api(self, method, path, body=None):
        """A call of the HTTP API: (status, JSON)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.http}{path}", data=data, method=method)
        request.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=HANG_GUARD) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def wait_until(self, what, check):
        """Polls the API with `check` (a function returning a truthy value
        when done) within HANG_GUARD: the API has no event to wait on."""
        deadline = time.monotonic() + HANG_GUARD
        while True:
            found = check()
            if found:
                return found
            assert time.monotonic() < deadline, f"never: {what}"
            time.sleep(0.05)

    def events(self, thread_id, until):
        """The thread's SSE events (parsed `data:`) up to the first for which
        `until` holds."""
        request = urllib.request.Request(f"http://{self.http}/v1/threads/{thread_id}/events")
        seen = []
        # The stream's keep-alive comments come every 15 s, so a read never
        # times out: the whole wait is bounded instead.
        deadline = time.monotonic() + HANG_GUARD
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as stream:
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("data:"):
                    seen.append(json.loads(line[5:]))
                    if until(seen[-1]):
                        return seen
                assert time.monotonic() < deadline, f"never came; the stream said: {seen}"
        raise AssertionError(f"the event stream ended: {seen}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
