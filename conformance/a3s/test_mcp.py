"""MCP servers: register, connect, list, tools, disconnect, against real MCP
servers (`@modelcontextprotocol/server-everything` on node, and gantry-tools'
Python fixture on the `mcp` SDK), both installed by `.ci/run`.

`gantry serve` gets only PATH and HOME from the test, so servers are
registered with absolute commands, as a real client would."""

import importlib.util
import json
import os
import pathlib
import shutil
import sys
import time

import grpc
import pytest

from conftest import Gantry, HANG_GUARD, ROOT, code_of

EVERYTHING = ROOT / ".ci/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FIXTURE = ROOT / "crates/gantry-tools/tests/fixtures/mcp/server.py"



@pytest.fixture
def gantry(full_access_gantry):
    """MCP stdio servers run outside the sandbox: a server takes them from a client
    only with --max-sandbox danger-full-access."""
    return full_access_gantry

def everything():
    """`node` and server-everything's `dist/index.js`, absolute."""
    index_js = pathlib.Path(os.environ.get("GANTRY_TEST_MCP_EVERYTHING", EVERYTHING))
    node = shutil.which("node")
    if not (node and index_js.is_file()):
        pytest.fail(f"node and server-everything ({index_js}) are needed: run .ci/run")
    return node, str(index_js)


def python_with_mcp():
    """This Python, which `.ci/run` gives the `mcp` package."""
    if importlib.util.find_spec("mcp") is None:
        pytest.fail(f"{sys.executable} lacks the `mcp` package: run .ci/run")
    return sys.executable


def stdio(pb, name, command, args, env=None, enabled=True):
    transport = pb.McpTransport(stdio=pb.McpStdioTransport(command=command, args=args))
    return pb.McpServerConfigProto(name=name, transport=transport, enabled=enabled, env=env or {})


def register(gantry, config):
    request = gantry.pb.RegisterMcpServerRequest(config=config)
    return gantry.stub.RegisterMcpServer(request, timeout=HANG_GUARD)


def servers(gantry):
    listed = gantry.stub.ListMcpServers(gantry.pb.ListMcpServersRequest(), timeout=HANG_GUARD)
    return {s.name: s for s in listed.servers}


def tools(gantry, server=None):
    request = gantry.pb.GetMcpToolsRequest(server_name=server) if server else gantry.pb.GetMcpToolsRequest()
    return gantry.stub.GetMcpTools(request, timeout=HANG_GUARD).tools


def test_mcp_servers_connect_offer_their_tools_and_disconnect(gantry):
    pb, stub = gantry.pb, gantry.stub
    node, index_js = everything()
    python = python_with_mcp()
    assert register(gantry, stdio(pb, "everything", node, [index_js], {"GANTRY_MCP_TEST_VAR": "x"})).success
    assert register(gantry, stdio(pb, "py", python, [str(FIXTURE), "stdio"])).success
    listed = servers(gantry)
    assert sorted(listed) == ["everything", "py"]
    assert listed["py"].enabled and not listed["py"].connected and listed["py"].tool_count == 0
    assert not listed["py"].HasField("error")
    assert list(tools(gantry)) == []

    for name in ("everything", "py"):
        connected = stub.ConnectMcpServer(pb.ConnectMcpServerRequest(name=name), timeout=HANG_GUARD)
        assert connected.success, connected
        assert all(t.startswith(f"mcp__{name}__") for t in connected.tool_names), connected
        assert servers(gantry)[name].tool_count == len(connected.tool_names)
    assert "mcp__py__add" in connected.tool_names

    every = tools(gantry)
    assert {t.server_name for t in every} == {"everything", "py"}
    only_py = tools(gantry, "py")
    add = next(t for t in only_py if t.tool_name == "add")
    assert (add.full_name, add.server_name, add.description) == ("mcp__py__add", "py", "Adds two integers.")
    schema = json.loads(add.input_schema)
    assert set(schema["properties"]) == {"a", "b"}, schema
    assert {t.server_name for t in only_py} == {"py"}
    echo = next(t for t in tools(gantry, "everything") if t.tool_name == "echo")
    assert "message" in json.loads(echo.input_schema)["properties"]

    assert stub.DisconnectMcpServer(pb.DisconnectMcpServerRequest(name="py"), timeout=HANG_GUARD).success
    listed = servers(gantry)
    assert not listed["py"].connected and listed["py"].tool_count == 0
    assert listed["everything"].connected
    assert list(tools(gantry, "py")) == []


def test_a_servers_tool_timeout_fails_a_slow_call_and_the_turn_goes_on(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    config = stdio(pb, "py", python_with_mcp(), [str(FIXTURE), "stdio"])
    config.tool_timeout_secs = 1
    assert register(gantry, config).success
    assert stub.ConnectMcpServer(pb.ConnectMcpServerRequest(name="py"), timeout=HANG_GUARD).success
    nap = {"reply": {"tool_calls": [{"name": "mcp__py__sleep", "arguments": {"seconds": 600}}]}}
    llm = mock_llm([nap, {"reply": {"text": "The nap timed out."}}])
    session = gantry.session(llm)
    started = time.monotonic()
    request = pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="nap")])
    answer = stub.Generate(request, timeout=HANG_GUARD)
    # The call failed at its server's timeout, long before the tool's own end.
    assert time.monotonic() - started < HANG_GUARD / 2
    assert answer.message.content == "The nap timed out." and answer.finish_reason == "stop"
    [call] = answer.tool_calls
    assert not call.result.success
    said = call.result.error + call.result.output
    assert "timed out after 1000 ms" in said, call
    # The model was told, and answered in the same turn.
    told = [m["content"] for m in llm.requests()[1]["body"]["messages"] if m["role"] == "tool"]
    assert "timed out after 1000 ms" in told[0], told


def test_mcp_bad_configs_unknown_disabled_and_unreachable_servers(gantry):
    pb, stub = gantry.pb, gantry.stub

    def invalid(config, field):
        code, details = code_of(lambda: register(gantry, config))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and field in details, (code, details)

    invalid(None, "config")
    invalid(stdio(pb, "", "node", []), "config.name")
    invalid(pb.McpServerConfigProto(name="x", enabled=True), "config.transport")
    invalid(stdio(pb, "x", " ", []), "config.transport.stdio.command")
    http = pb.McpTransport(http=pb.McpHttpTransport(url="ftp://127.0.0.1/mcp"))
    invalid(pb.McpServerConfigProto(name="x", transport=http, enabled=True), "config.transport.http.url")
    assert servers(gantry) == {}

    code, details = code_of(lambda: stub.ConnectMcpServer(pb.ConnectMcpServerRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "name" in details
    code, _ = code_of(lambda: stub.ConnectMcpServer(pb.ConnectMcpServerRequest(name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: stub.DisconnectMcpServer(pb.DisconnectMcpServerRequest(name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: tools(gantry, "nope"))
    assert code == grpc.StatusCode.NOT_FOUND

    # `enabled` left unset is false: the server is kept but not connected.
    register(gantry, stdio(pb, "off", sys.executable, [], enabled=False))
    code, details = code_of(lambda: stub.ConnectMcpServer(pb.ConnectMcpServerRequest(name="off"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "disabled" in details

    register(gantry, stdio(pb, "ghost", "/nonexistent/gantry-no-such-mcp-server", []))
    code, details = code_of(lambda: stub.ConnectMcpServer(pb.ConnectMcpServerRequest(name="ghost"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.UNAVAILABLE and "gantry-no-such-mcp-server" in details
    ghost = servers(gantry)["ghost"]
    assert not ghost.connected and "gantry-no-such-mcp-server" in ghost.error


def test_a_server_below_full_access_takes_no_stdio_server(pb, tmp_path):
    default = Gantry(pb, tmp_path)
    try:
        marker = tmp_path / "planted"
        config = stdio(pb, "planted", "/bin/sh", ["-c", f"touch {marker}"])
        code, details = code_of(lambda: register(default, config))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
        assert "outside the sandbox" in details and "--max-sandbox danger-full-access" in details
        assert servers(default) == {}
        assert not marker.exists()
    finally:
        default.stop()
