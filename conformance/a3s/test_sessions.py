"""Lifecycle and sessions."""

import grpc

from conftest import HANG_GUARD, code_of


def test_health_reports_not_initialized_until_initialize(gantry):
    pb, stub = gantry.pb, gantry.stub
    before = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    assert before.status == pb.HealthCheckResponse.STATUS_UNKNOWN
    assert before.details["initialized"] == "false"
    init = stub.Initialize(pb.InitializeRequest(workspace=str(gantry.workspace)), timeout=HANG_GUARD)
    assert init.success and init.info.name == "gantry"
    after = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
    assert after.status == pb.HealthCheckResponse.STATUS_HEALTHY


def test_capabilities_list_real_tools(gantry):
    caps = gantry.stub.GetCapabilities(gantry.pb.GetCapabilitiesRequest(), timeout=HANG_GUARD)
    names = {t.name for t in caps.tools}
    assert "shell" in names, names
    assert "streaming" in caps.features


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
    gone = stub.GetSession(pb.GetSessionRequest(session_id="py-session"), timeout=HANG_GUARD)
    assert gone.session.state == pb.SESSION_STATE_COMPLETED
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


def test_shutdown_stops_the_server_gracefully(gantry):
    reply = gantry.stub.Shutdown(gantry.pb.ShutdownRequest(), timeout=HANG_GUARD)
    assert reply.success
    assert gantry.proc.wait(timeout=HANG_GUARD) == 0
