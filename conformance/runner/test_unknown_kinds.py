"""A runner asked for a kind of request its protocol version does not know
(a 0.7.0 control plane's heartbeats and interrupts reaching `gantry runner
--protocol 0.2`) ignores it, as CompanyHelm's runner does, and its log
names each kind, one line per kind however often it comes."""

import re

from conftest import describe


def test_each_unknown_kind_is_named_on_a_line_of_its_own_once(start_runner):
    rig = start_runner(protocol="0.2", plane="0.7")
    channel = rig.plane.accept()
    for n in range(3):
        channel.send(f"h{n}", heartbeat_request={})
        channel.send(f"i{n}", interrupt_turn_request={"thread_id": "t-1"})
    channel.send("x1", codex_configuration_request={"auth_type": rig.plane.pb.CODEX_AUTH_TYPE_API_KEY})
    # Requests are served in order: once this one is answered, the others
    # were seen (and logged).
    channel.send("d1", delete_thread_request={"thread_id": "t-1"})
    answer = channel.reply("d1")
    assert answer.WhichOneof("payload") in ("request_error", "thread_update"), describe(answer)
    # None of the unknown ones got an answer.
    assert [m.request_id for m in channel.log] == ["d1"], [describe(m) for m in channel.log]

    # The last kind sent is logged last: once its line is there, every
    # line the others made is too.
    log = rig.runner.wait_stderr('kind="codex_configuration_request"')
    lines = [line for line in log.splitlines() if "does not know" in line]
    kinds = sorted(re.search(r'kind="([a-z_]+)"', line).group(1) for line in lines)
    assert kinds == ["codex_configuration_request", "heartbeat_request", "interrupt_turn_request"], lines
    assert all("a kind of 0.7" in line for line in lines), lines
