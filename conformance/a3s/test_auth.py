"""Who may call, and who gets keys back: the bearer token, the Unix socket
(what A3S's TypeScript SDK, which sends no metadata, can dial as
`address: "unix:PATH"`), and --reveal-provider-keys."""

import stat
import subprocess

import grpc

from conftest import HANG_GUARD, Gantry, code_of
from harness import binary

KEY = "sk-client-0123456789"
MASKED = "sk-...6789"


def token_file(tmp_path):
    path = tmp_path / "token.txt"
    path.write_text("s3cret-token\n")
    return path


BEARER = (("authorization", "Bearer s3cret-token"),)


def add_provider(gantry, metadata=()):
    pb = gantry.pb
    added = gantry.stub.AddProvider(
        pb.AddProviderRequest(provider=pb.ProviderInfo(name="client", api_key=KEY)),
        metadata=metadata,
        timeout=HANG_GUARD,
    )
    assert added.success, added.error


def keys(gantry, metadata=()):
    """The key GetProvider and ListProviders give this caller."""
    pb, stub = gantry.pb, gantry.stub
    got = stub.GetProvider(pb.GetProviderRequest(name="client"), metadata=metadata, timeout=HANG_GUARD)
    listed = stub.ListProviders(pb.ListProvidersRequest(), metadata=metadata, timeout=HANG_GUARD)
    return got.provider.api_key, {p.name: p.api_key for p in listed.providers}["client"]


def test_keys_are_revealed_only_to_authenticated_callers_of_a_server_that_reveals(pb, tmp_path):
    token = token_file(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    revealing = Gantry(pb, tmp_path / "a", extra_args=["--auth-token-file", str(token), "--reveal-provider-keys"])
    try:
        add_provider(revealing, BEARER)
        assert keys(revealing, BEARER) == (KEY, KEY), "A3S's clients read back the key they set"
        code, _ = code_of(lambda: keys(revealing))
        assert code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        revealing.stop()

    masking = Gantry(pb, tmp_path / "b", extra_args=["--auth-token-file", str(token)])
    try:
        add_provider(masking, BEARER)
        assert keys(masking, BEARER) == (MASKED, MASKED), "masked by default, even to the token's holder"
    finally:
        masking.stop()


def test_reveal_needs_a_way_to_authenticate(tmp_path):
    run = subprocess.run(
        [binary("GANTRY_BIN"), "serve", "--storage-backend", "memory", "--listen-addr", "127.0.0.1:0",
         "--reveal-provider-keys"],
        capture_output=True, text=True, timeout=HANG_GUARD, stdin=subprocess.DEVNULL,
    )
    assert run.returncode != 0
    assert "--auth-token-file" in run.stderr, run.stderr


def test_the_unix_socket_lets_the_servers_user_in_without_metadata(pb, tmp_path, mock_llm):
    (tmp_path / "run").mkdir()
    socket = tmp_path / "run" / "gantry.sock"
    token = token_file(tmp_path)
    gantry = Gantry(
        pb, tmp_path, listen=f"unix:{socket}",
        extra_args=["--auth-token-file", str(token), "--reveal-provider-keys"],
    )
    try:
        assert gantry.addr == f"unix:{socket}"
        assert stat.S_IMODE(socket.stat().st_mode) == 0o600, "only the server's user may open it"
        stub = gantry.stub
        # What the SDK does, with no metadata at all.
        stub.Initialize(pb.InitializeRequest(workspace=str(gantry.workspace)), timeout=HANG_GUARD)
        health = stub.HealthCheck(pb.HealthCheckRequest(), timeout=HANG_GUARD)
        assert health.status == pb.HealthCheckResponse.STATUS_HEALTHY
        llm = mock_llm([{"reply": {"text": "over the socket"}}])
        session = gantry.session(llm)
        answer = stub.Generate(
            pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="hi")]),
            timeout=HANG_GUARD,
        )
        assert answer.message.content == "over the socket"
        add_provider(gantry)
        assert keys(gantry) == (KEY, KEY), "the socket's peer is authenticated"
    finally:
        gantry.stop()
    assert not socket.exists(), "the socket is removed when the server stops"
