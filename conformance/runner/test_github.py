"""The GitHub rpcs: the runner asks the control plane for its installations
and an installation token, and hands the token to the thread's git commands
only."""

import base64

from conftest import TOKEN, is_turn_completed, items, reply, shell, status_name, user_message

GIT = "git config --get http.https://github.com/.extraheader"


def test_git_commands_get_an_installation_token_from_the_control_plane(start_runner):
    rig = start_runner([shell(GIT), shell("echo plain=${#GH_TOKEN}"), reply("pushed")])
    rig.plane.github = {7: "ghs_installation7"}
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    channel.send("m1", create_user_message_request=user_message(thread, "push"))
    updates = channel.until(is_turn_completed)

    outputs = [
        u.command_execution_item.output
        for u in items(updates)
        if u.HasField("command_execution_item") and status_name(u) == "ITEM_STATUS_COMPLETED"
    ]
    basic = base64.b64encode(b"x-access-token:ghs_installation7").decode()
    assert len(outputs) == 2, outputs
    assert f"AUTHORIZATION: basic {basic}" in outputs[0], outputs[0]
    # A command that runs neither git nor gh gets no token.
    assert "plain=0" in outputs[1], outputs[1]

    # It listed the installations, then asked for installation 7's token, as itself.
    [(listed, list_auth, _), (minted, token_auth, token_request)] = rig.plane.github_calls
    assert (listed, minted) == ("ListGithubInstallationsForRunner", "GetGithubInstallationAccessTokenForRunner")
    assert list_auth == token_auth == f"Bearer {TOKEN}"
    assert token_request.installation_id == 7
