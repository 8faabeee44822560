"""CreateUserMessageRequest: the turn it runs reported as TurnUpdates and
ItemUpdates that all answer it; steering a running turn; a request sent
again; the model and reasoning level a thread or a message asks for."""

import os

from conftest import BLOCKED, describe, is_turn_completed, items, reply, shell, user_message


def turn_id(message):
    assert message.WhichOneof("payload") == "turn_update", describe(message)
    return message.turn_update.sdk_turn_id


def test_a_message_runs_a_turn_reported_item_by_item(start_runner):
    rig = start_runner([shell("echo hello from the runner; pwd"), reply("All done.")])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    channel.send("m1", create_user_message_request=user_message(thread, "say hello"))
    updates = channel.until(is_turn_completed)

    assert [describe(m) for m in updates] == [
        "turn TURN_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]",
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        "turn TURN_STATUS_COMPLETED [m1]",
    ]
    assert turn_id(updates[0]) == turn_id(updates[-1])
    user_started, user, command_started, command, answer_started, answer = items(updates)
    assert user_started.text == user.text == "say hello"
    # Each item keeps its id from running to completed; items differ.
    for started, completed in [(user_started, user), (command_started, command), (answer_started, answer)]:
        assert started.sdk_item_id == completed.sdk_item_id
    assert len({user.sdk_item_id, command.sdk_item_id, answer.sdk_item_id}) == 3

    # The command ran in the thread's own workspace, in a process of its own.
    workspace = os.path.realpath(rig.runner.workspace(thread))
    for update in (command_started, command):
        run = update.command_execution_item
        assert run.command == "echo hello from the runner; pwd"
        assert os.path.realpath(run.cwd) == workspace, run.cwd
    assert command.command_execution_item.process_id.isdigit(), command.command_execution_item.process_id
    output = command.command_execution_item.output
    assert "hello from the runner" in output and workspace in output, output
    assert answer.text == "All done."

    # The model saw the user's text and the command's output.
    [first, second] = rig.llm.requests()
    assert first["body"]["messages"][-1]["content"] == "say hello"
    assert any("hello from the runner" in str(m.get("content")) for m in second["body"]["messages"])


def test_a_running_turn_is_steered_only_when_allowed(start_runner):
    rig = start_runner([shell(BLOCKED), reply("steered")])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    channel.send("m1", create_user_message_request=user_message(thread, "build"))
    started = channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    turn = turn_id(started[0])

    # The same request again is no new message: it says where its turn stands.
    channel.send("m1", create_user_message_request=user_message(thread, "build"))
    again = channel.reply("m1")
    assert describe(again) == "turn TURN_STATUS_RUNNING [m1]" and turn_id(again) == turn
    # Not allowed to steer: refused, saying how to steer.
    channel.send("m2", create_user_message_request=user_message(thread, "not this", allow_steer=False))
    refused = channel.reply("m2")
    assert refused.WhichOneof("payload") == "request_error", describe(refused)
    assert "allow_steer" in refused.request_error.error_message
    # Allowed: it joins the running turn.
    channel.send("m3", create_user_message_request=user_message(thread, "also test", allow_steer=True))
    steered = channel.reply("m3")
    assert describe(steered) == "turn TURN_STATUS_RUNNING [m3]" and turn_id(steered) == turn

    rig.runner.release(thread)
    rest = channel.until(is_turn_completed)
    said = [describe(m) for m in rest]
    assert "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]" in said, said
    # The steer is a user message of the turn, answering its own request.
    [steer] = [m.item_update for m in rest if describe(m) == "USER_MESSAGE ITEM_STATUS_COMPLETED [m3]"]
    assert steer.text == "also test"
    assert said[-1] == "turn TURN_STATUS_COMPLETED [m1]" and turn_id(rest[-1]) == turn
    # One turn in all: the model's next request ends with the steer, never the refused text.
    requests = rig.llm.requests()
    assert len(requests) == 2
    assert requests[1]["body"]["messages"][-1]["content"] == "also test"
    assert "not this" not in str(requests)


def test_a_request_sent_again_has_no_second_effect(start_runner):
    rig = start_runner([reply("once")])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    channel.send("m1", create_user_message_request=user_message(thread, "hi"))
    turn = turn_id(channel.until(is_turn_completed)[-1])

    # The control plane did not hear back and says everything again.
    channel.send("agent-1", create_agent_request={"agent_id": "a1", "agent_sdk": "gantry"})
    assert describe(channel.reply("agent-1")) == "agent a1 AGENT_STATUS_READY [agent-1]"
    channel.send("thread-1", create_thread_request={"agent_id": "a1", "model": "mock/gpt-4.1"})
    assert describe(channel.reply("thread-1")) == f"thread {thread} THREAD_STATUS_READY [thread-1]"
    channel.send("m1", create_user_message_request=user_message(thread, "hi"))
    done = channel.reply("m1")
    assert describe(done) == "turn TURN_STATUS_COMPLETED [m1]" and turn_id(done) == turn

    assert len(rig.llm.requests()) == 1, "one model call"
    assert [p.name for p in rig.runner.workspaces.iterdir()] == [thread], "one thread"


def test_threads_and_messages_choose_their_model_and_reasoning_level(start_runner):
    thinking = {"reply": {"reasoning": "Weighing it up.", "text": "thought hard"}}
    rig = start_runner([thinking, reply("lightly"), reply("still"), reply("switched")])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel, model="mock/o4-mini", reasoning_level="high")
    channel.send("m1", create_user_message_request=user_message(thread, "think"))
    said = channel.until(is_turn_completed)
    # The model's reasoning is an item of its own, started before the answer.
    lines = [describe(m) for m in said]
    reasoning = [m.item_update for m in said if describe(m) == "REASONING ITEM_STATUS_COMPLETED [m1]"]
    assert [r.text for r in reasoning] == ["Weighing it up."], lines
    assert lines.index("REASONING ITEM_STATUS_RUNNING [m1]") < lines.index("AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]")
    # A message may switch them, for the thread's later messages too.
    for request_id, switch in [
        ("m2", {"model_reasoning_level": "low"}),
        ("m3", {}),
        ("m4", {"model": "mock/gpt-4.1"}),
    ]:
        channel.send(request_id, create_user_message_request=user_message(thread, "again", **switch))
        channel.until(is_turn_completed)

    bodies = [r["body"] for r in rig.llm.requests()]
    # gpt-4.1 takes no reasoning effort, so none is sent to it.
    assert [(b["model"], b.get("reasoning_effort")) for b in bodies] == [
        ("o4-mini", "high"),
        ("o4-mini", "low"),
        ("o4-mini", "low"),
        ("gpt-4.1", None),
    ]
