"""Lifecycle and sessions."""

import grpc
import pytest

from conftest import HANG_GUARD, code_of


def test_health_reports_degraded_until_initialize(gantry):
    pb, stub = gantry.pb, gantry.stub
    before = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    # A3S's server: degraded until initialized.
    assert before.status == pb.HealthCheckResponse.STATUS_DEGRADED
    assert before.details["initialized"] == "false"
    init = stub.Initialize(pb.InitializeRequest(workspace=str(gantry.workspace)), timeout=HANG_GUARD)
    assert init.success and init.info.name == "gantry"
    after = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    assert after.status == pb.HealthCheckResponse.STATUS_HEALTHY


def test_capabilities_list_real_tools(gantry):
    caps = gantry.stub.GetCapabilities(gantry.pb.GetCapabilitiesRequest(), timeout=HANG_GUARD)
    names = {t.name for t in caps.tools}
    # A3S's own names for the built-in tools.
    assert {"bash", "read", "write", "edit", "grep", "glob", "ls"} <= names, names
    assert "shell" not in names and "read_file" not in names
    assert "streaming" in caps.features and "tool_calling" in caps.features
    assert caps.limits.max_concurrent_sessions > 0


def test_sessions_are_created_listed_read_and_destroyed(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([])
    created = stub.CreateSession(
        pb.CreateSessionRequest(
            session_id="py-session",
            config=pb.SessionConfig(name="py", llm=gantry.llm_config(llm), system_prompt="be brief"),
            initial_context=[pb.Message(role="user", content="hello")],
        ),
        timeout=HANG_GUARD,
    )
    assert created.session_id == "py-session"
    assert created.session.state == pb.SESSION_STATE_ACTIVE
    assert created.session.config.llm.api_key == ""
    listed = stub.ListSessions(pb.ListSessionsRequest(), timeout=HANG_GUARD)
    assert [s.session_id for s in listed.sessions] == ["py-session"]
    messages = stub.GetMessages(pb.GetMessagesRequest(session_id="py-session"), timeout=HANG_GUARD)
    assert messages.total_count == 1 and not messages.has_more
    assert messages.messages[0].content[0].text.text == "hello"

    code, _ = code_of(lambda: stub.CreateSession(pb.CreateSessionRequest(session_id="py-session"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.ALREADY_EXISTS

    assert stub.DestroySession(pb.DestroySessionRequest(session_id="py-session"), timeout=HANG_GUARD).success
    # Gone, as A3S answers.
    code, _ = code_of(lambda: stub.GetSession(pb.GetSessionRequest(session_id="py-session"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    assert not stub.ListSessions(pb.ListSessionsRequest(), timeout=HANG_GUARD).sessions


def test_unknown_and_missing_sessions_are_told_apart(gantry):
    pb, stub = gantry.pb, gantry.stub
    code, _ = code_of(lambda: stub.GetSession(pb.GetSessionRequest(session_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(lambda: stub.GetSession(pb.GetSessionRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "session_id" in details


def test_configure_session_changes_the_model_of_the_next_turn(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    first = mock_llm([{"reply": {"text": "from the first"}}])
    second = mock_llm([{"reply": {"text": "from the second"}}])
    session = gantry.session(first)
    configured = stub.ConfigureSession(
        pb.ConfigureSessionRequest(
            session_id=session,
            config=pb.SessionConfig(system_prompt="Answer in French.", llm=gantry.llm_config(second, model="gpt-5")),
        ),
        timeout=HANG_GUARD,
    )
    assert configured.session.config.system_prompt == "Answer in French."
    assert configured.session.config.llm.model == "gpt-5"
    request = pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="hi")])
    assert stub.Generate(request, timeout=HANG_GUARD).message.content == "from the second"
    assert first.requests() == []
    sent = second.requests()[0]["body"]
    assert sent["model"] == "gpt-5" and sent["messages"][0]["content"] == "Answer in French."
    code, details = code_of(
        lambda: stub.ConfigureSession(pb.ConfigureSessionRequest(session_id=session), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "config" in details


def test_shutdown_shuts_the_agent_down_and_keeps_serving(gantry):
    pb, stub = gantry.pb, gantry.stub
    stub.Initialize(pb.InitializeRequest(workspace=str(gantry.workspace)), timeout=HANG_GUARD)
    reply = stub.Shutdown(pb.ShutdownRequest(), timeout=HANG_GUARD)
    assert reply.success and "shutdown" in reply.message.lower()
    # Still serving, back to not initialized; Initialize brings it back.
    assert gantry.proc.poll() is None
    health = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    assert health.status == pb.HealthCheckResponse.STATUS_DEGRADED
    stub.Initialize(pb.InitializeRequest(), timeout=HANG_GUARD)
    health = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    assert health.status == pb.HealthCheckResponse.STATUS_HEALTHY


def test_shutdown_stops_the_process_with_the_flag(pb, tmp_path):
    from conftest import Gantry

    server = Gantry(pb, tmp_path, extra_args=["--exit-on-shutdown"])
    try:
        assert server.stub.Shutdown(pb.ShutdownRequest(), timeout=HANG_GUARD).success
        assert server.proc.wait(timeout=HANG_GUARD) == 0
    finally:
        server.stop()


def test_health_during_the_grace_period_says_shutting_down(pb, tmp_path, mock_llm):
    from conftest import Gantry

    server = Gantry(pb, tmp_path, extra_args=["--exit-on-shutdown", "--grace-secs", "20"])
    try:
        stub = server.stub
        stub.Initialize(pb.InitializeRequest(), timeout=HANG_GUARD)
        nap = {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 15"}}]}}
        llm = mock_llm([nap, {"reply": {"text": "rested"}}])
        session = server.session(llm)
        # A turn in flight keeps the process in its grace period.
        request = pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="nap")])
        stream = stub.StreamGenerate(request, timeout=HANG_GUARD)
        next(c for c in stream if c.type == "tool_call")
        assert stub.Shutdown(pb.ShutdownRequest(), timeout=HANG_GUARD).success
        # The listener stops taking connections as the grace period begins
        # (its GOAWAY may reach this client before the next call or after):
        # a call that still gets through is told the server shuts down, one
        # that does not is refused. Never healthy.
        try:
            health = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, e
        else:
            assert health.status == pb.HealthCheckResponse.STATUS_UNHEALTHY, health
            assert "shutting down" in health.message
            assert health.details["initialized"] == "false" and health.details["shutting_down"] == "true"
        assert server.proc.poll() is None, "the turn still has its grace period"
    finally:
        server.stop()


def test_a_missing_workspace_is_created(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    missing = gantry.workspace / "new" / "project"
    created = stub.CreateSession(
        pb.CreateSessionRequest(config=pb.SessionConfig(workspace=str(missing), llm=gantry.llm_config(mock_llm([])))),
        timeout=HANG_GUARD,
    )
    assert missing.is_dir()
    assert created.session.config.workspace == str(missing)


def test_a_destroyed_session_can_not_be_restored_and_a_live_one_can(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    restored = stub.RestoreSession(pb.RestoreSessionRequest(session_id=session), timeout=HANG_GUARD)
    assert restored.success and restored.session_id == session
    stub.DestroySession(pb.DestroySessionRequest(session_id=session), timeout=HANG_GUARD)
    again = stub.RestoreSession(pb.RestoreSessionRequest(session_id=session), timeout=HANG_GUARD)
    assert not again.success and "destroyed" in again.message


def test_a_session_moves_to_another_workspace_between_turns_only(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    pwd = {"reply": {"tool_calls": [{"name": "shell", "arguments": {"command": "pwd"}}]}}
    llm = mock_llm([pwd, pwd, {"reply": {"text": "moved"}}])
    session = gantry.session(llm)
    confirm = pb.ConfirmationPolicy(enabled=True, require_confirm_tools=["shell"], default_timeout_ms=60_000)
    stub.SetConfirmationPolicy(pb.SetConfirmationPolicyRequest(session_id=session, policy=confirm), timeout=HANG_GUARD)
    moved = gantry.workspace / "elsewhere"

    # A turn waits for a confirmation: it runs, so the workspace stays.
    stream = stub.StreamGenerate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="where?")]),
        timeout=2 * HANG_GUARD,
    )
    for chunk in stream:
        if chunk.metadata.get("event") == "confirmation_required":
            break
    configure = lambda: stub.ConfigureSession(  # noqa: E731
        pb.ConfigureSessionRequest(session_id=session, config=pb.SessionConfig(workspace=str(moved))),
        timeout=HANG_GUARD,
    )
    code, details = code_of(configure)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "workspace" in details and "turn" in details, details
    stub.Cancel(pb.CancelRequest(session_id=session), timeout=HANG_GUARD)
    with pytest.raises(grpc.RpcError) as ended:
        for _ in stream:
            pass
    assert ended.value.code() == grpc.StatusCode.CANCELLED
    got = stub.GetSession(pb.GetSessionRequest(session_id=session), timeout=HANG_GUARD)
    assert got.session.config.workspace == str(gantry.workspace)

    # Between turns it moves (created when missing, as A3S does), and the
    # next turn's commands run there.
    assert configure().session.config.workspace == str(moved)
    assert moved.is_dir()
    stub.SetConfirmationPolicy(
        pb.SetConfirmationPolicyRequest(session_id=session, policy=pb.ConfirmationPolicy(enabled=False)),
        timeout=HANG_GUARD,
    )
    answer = stub.Generate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="where now?")]),
        timeout=HANG_GUARD,
    )
    assert answer.message.content == "moved"
    assert answer.tool_calls[0].result.output.splitlines()[-1] == str(moved), answer.tool_calls
    got = stub.GetSession(pb.GetSessionRequest(session_id=session), timeout=HANG_GUARD)
    assert got.session.config.workspace == str(moved)
