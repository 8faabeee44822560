"""A channel that breaks mid-turn: the runner registers again, opens a new
channel and reports what it had not yet said, ending with the turn."""

from conftest import BLOCKED, describe, is_turn_completed, items, reply, shell, user_message


def start_blocked_turn(start_runner):
    """A runner whose turn (request m1) is blocked in a command: the rig,
    the channel, the thread and the turn's id."""
    rig = start_runner([shell(BLOCKED), reply("finished while you were away")])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    channel.send("m1", create_user_message_request=user_message(thread, "long job"))
    started = channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    assert describe(started[0]) == "turn TURN_STATUS_RUNNING [m1]"
    return rig, channel, thread, started[0].turn_update.sdk_turn_id


def assert_rest_of_turn_reported(rig, turn):
    """The next channel's messages carry the turn to its end."""
    channel = rig.plane.accept()
    assert len(rig.plane.registrations) == 2, "registered again before the new channel"
    rest = channel.until(is_turn_completed)
    assert rest[-1].turn_update.sdk_turn_id == turn
    said = [describe(m) for m in rest]
    assert "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]" in said, said
    assert said[-2:] == ["AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]", "turn TURN_STATUS_COMPLETED [m1]"], said
    [command] = [
        u for u in items(rest) if u.HasField("command_execution_item") and "released" in u.command_execution_item.output
    ]
    assert command.command_execution_item.command == BLOCKED
    assert items(rest)[-1].text == "finished while you were away"
    # Every update of the turn, said again or new, still answers its request.
    of_turn = [m for m in rest if m.WhichOneof("payload") in ("turn_update", "item_update")]
    assert {m.request_id for m in of_turn} == {"m1"}, said


def test_a_channel_the_control_plane_aborts_mid_turn_is_reopened(start_runner):
    rig, channel, thread, turn = start_blocked_turn(start_runner)
    channel.abort()
    rig.runner.release(thread)
    assert_rest_of_turn_reported(rig, turn)


def test_a_control_plane_down_while_the_turn_ends_hears_the_end_when_back(start_runner):
    rig, channel, thread, turn = start_blocked_turn(start_runner)
    rig.plane.stop()
    rig.runner.release(thread)
    # The turn goes on without the control plane: the model is asked again.
    rig.llm.wait_requests(2)
    rig.plane.start()  # the same port
    assert_rest_of_turn_reported(rig, turn)
