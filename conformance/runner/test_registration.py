"""RegisterRunner and the connection: the token on every call, what the
runner offers, the URL's path as an rpc prefix, a refused token."""

import grpc
import pytest

from conftest import HANG_GUARD, MODELS, SERVICE, TOKEN, describe, reply, shell


def test_the_runner_registers_its_sdk_and_models_with_its_token_then_opens_the_channel(start_runner):
    rig = start_runner()
    channel = rig.plane.accept()

    # Registration came first (the channel is opened after it), once.
    [(authorization, request)] = rig.plane.registrations
    assert authorization == f"Bearer {TOKEN}"
    [sdk] = request.agent_sdks
    assert sdk.name == "gantry"
    offered = {model.name: list(model.reasoning) for model in sdk.models}
    # The config's models, named PROVIDER/MODEL, the default among them.
    assert set(offered) == {f"mock/{m}" for m in MODELS}, offered
    # A model that does not reason offers no level; one that does, its levels.
    assert offered["mock/gpt-4.1"] == []
    assert offered["mock/o4-mini"] == ["low", "medium", "high"]

    # The channel is live: a request gets its answer.
    channel.send("agent-1", create_agent_request={"agent_id": "a1", "agent_sdk": "gantry"})
    assert describe(channel.reply("agent-1")) == "agent a1 AGENT_STATUS_READY [agent-1]"


def test_a_path_in_the_url_prefixes_every_rpc(start_runner):
    # The plane serves only /cp/companyhelm.runner.v1.AgentRunnerControlService/*.
    rig = start_runner([shell("git config --get http.https://github.com/.extraheader"), reply("ok")], prefix="cp")
    rig.plane.github = {7: "ghs_prefixed"}
    channel = rig.plane.accept()
    assert len(rig.plane.registrations) == 1
    thread = rig.agent_and_thread(channel)

    # A git command makes the runner call both GitHub rpcs, under the prefix too.
    channel.send("m1", create_user_message_request={"agent_id": "a1", "thread_id": thread, "text": "fetch"})
    channel.until(lambda m: describe(m) == "turn TURN_STATUS_COMPLETED [m1]")
    called = [rpc for rpc, _, _ in rig.plane.github_calls]
    assert called == ["ListGithubInstallationsForRunner", "GetGithubInstallationAccessTokenForRunner"], called

    # Without the prefix there is nothing there: the runner did use it.
    with grpc.insecure_channel(f"127.0.0.1:{rig.plane.port}") as plain, pytest.raises(grpc.RpcError) as refused:
        plain.unary_unary(f"/{SERVICE}/RegisterRunner")(b"", timeout=HANG_GUARD)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_refused_token_stops_the_runner_telling_to_check_the_token(start_runner):
    rig = start_runner(token="not-the-runner-secret")
    code, stderr = rig.runner.wait_exit()
    assert code != 0, stderr
    assert "refused this runner" in stderr and "check the token" in stderr, stderr
    # It did say who it was, and went no further than registering.
    assert [auth for auth, _ in rig.plane.registrations] == ["Bearer not-the-runner-secret"]
    assert rig.plane.opened_channels() == 0
