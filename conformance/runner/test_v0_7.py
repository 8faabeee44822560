"""`gantry runner --protocol 0.7` under a control plane of 0.7.0's (the
protocol CompanyHelm ships today): registration with a ready SDK, threads
whose ids the control plane picks, every request, heartbeats and interrupts,
updates that name their thread and turn, token usage."""

import os

from conftest import BLOCKED, MODELS, describe, is_turn_completed, items, reply, shell


def message(thread_id, text, **fields):
    """A 0.7.0 CreateUserMessageRequest: no agent."""
    return {"thread_id": thread_id, "text": text, **fields}


def error_of(message):
    assert message.WhichOneof("payload") == "request_error", describe(message)
    return message.request_error.error_message


def test_the_runner_registers_a_ready_sdk_and_never_asks_for_github_tokens(start_runner):
    rig = start_runner(protocol="0.7")
    rig.plane.accept()
    [(authorization, registration)] = rig.plane.registrations
    assert authorization == "Bearer runner-secret-1"
    [sdk] = registration.agent_sdks
    assert sdk.name == "gantry"
    assert sdk.status == rig.plane.pb.AGENT_SDK_STATUS_READY
    assert [m.name for m in sdk.models] == [f"mock/{m}" for m in MODELS]
    assert not sdk.HasField("error_message")
    assert rig.plane.github_calls == []


def test_a_thread_takes_the_control_planes_id_and_instructions_and_runs_a_turn(start_runner):
    rig = start_runner([shell("echo from 0.7; pwd"), reply("Done.")], protocol="0.7")
    channel = rig.plane.accept()
    thread = rig.thread_v0_7(channel, "thread-7", additional_model_instructions="Always answer in French.")
    assert rig.runner.workspace(thread).is_dir()
    # A re-sent creation finds the thread it made.
    rig.thread_v0_7(channel, "thread-7")

    channel.send("m1", create_user_message_request=message(thread, "say hello"))
    said = channel.until(is_turn_completed)
    lines = [describe(m) for m in said]
    assert lines[0] == "turn TURN_STATUS_RUNNING [m1]", lines
    assert lines[-1] == "turn TURN_STATUS_COMPLETED [m1]", lines
    for expected in [
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {thread} [-]",
    ]:
        assert expected in lines, lines
    # Every turn and item update names its thread and turn.
    turn = said[0].turn_update.sdk_turn_id
    assert {m.turn_update.thread_id for m in said if m.WhichOneof("payload") == "turn_update"} == {thread}
    for item in items(said):
        assert (item.thread_id, item.sdk_turn_id) == (thread, turn), item
    [command] = [i.command_execution_item for i in items(said) if i.status == rig.plane.pb.ITEM_STATUS_COMPLETED and i.HasField("command_execution_item")]
    assert os.path.realpath(command.cwd) == os.path.realpath(rig.runner.workspace(thread))
    assert "from 0.7" in command.output
    # Token usage by thread, not by request: one per model response, each
    # with that response's tokens and the thread's so far.
    first, second = [m.thread_token_usage_update for m in said if m.WhichOneof("payload") == "thread_token_usage_update"]
    assert first.sdk_turn_id == second.sdk_turn_id == turn
    assert first.last_usage.total_tokens > 0 and second.last_usage.total_tokens > 0
    assert second.total_usage.total_tokens == first.last_usage.total_tokens + second.last_usage.total_tokens

    # The thread's instructions reached the model.
    first = rig.llm.requests()[0]["body"]["messages"]
    assert "Always answer in French." in str([m for m in first if m["role"] == "system"]), first


def test_heartbeats_are_answered_even_while_a_turn_runs(start_runner):
    rig = start_runner([shell(BLOCKED), reply("ok")], protocol="0.7")
    channel = rig.plane.accept()
    channel.send("h1", heartbeat_request={})
    assert describe(channel.reply("h1")) == "heartbeat [h1]"
    thread = rig.thread_v0_7(channel)
    channel.send("m1", create_user_message_request=message(thread, "long job"))
    channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    channel.send("h2", heartbeat_request={})
    assert describe(channel.reply("h2")) == "heartbeat [h2]"
    rig.runner.release(thread)
    channel.until(is_turn_completed)


def test_an_interrupt_ends_the_running_turn_and_its_command(start_runner):
    rig = start_runner([shell(BLOCKED)], protocol="0.7")
    channel = rig.plane.accept()
    thread = rig.thread_v0_7(channel)
    # Nothing running: the thread is said ready (as CompanyHelm's runner
    # says it, under no request id).
    channel.send("i0", interrupt_turn_request={"thread_id": thread})
    assert describe(channel.next()) == f"thread {thread} THREAD_STATUS_READY [-]"

    channel.send("m1", create_user_message_request=message(thread, "long job"))
    running = channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    turn = running[0].turn_update.sdk_turn_id
    channel.send("i1", interrupt_turn_request={"thread_id": thread})
    # The message's turn says it ended, once; nothing answers the interrupt.
    said = channel.until(is_turn_completed)
    assert [m.turn_update.sdk_turn_id for m in said if is_turn_completed(m)] == [turn]
    assert describe(said[-1]) == "turn TURN_STATUS_COMPLETED [m1]"
    assert not any(m.request_id == "i1" for m in channel.log)
    [command] = [i.command_execution_item for i in items(said) if i.HasField("command_execution_item")]
    assert "released" not in command.output, command.output
    assert command.process_id.isdigit(), command.process_id
    # The thread takes messages again.
    channel.send("m2", create_user_message_request=message(thread, "again"))
    assert describe(channel.reply("m2")) == "turn TURN_STATUS_RUNNING [m2]"


def test_threads_are_deleted_and_refusals_name_the_field(start_runner):
    rig = start_runner(protocol="0.7")
    channel = rig.plane.accept()
    thread = rig.thread_v0_7(channel)
    channel.send("d1", delete_thread_request={"thread_id": thread})
    assert describe(channel.reply("d1")) == f"thread {thread} THREAD_STATUS_DELETED [d1]"
    channel.send("m1", create_user_message_request=message(thread, "still there?"))
    assert thread in error_of(channel.reply("m1"))
    # A thread this runner never had is deleted already (as CompanyHelm's runner says).
    channel.send("d2", delete_thread_request={"thread_id": "never-made"})
    assert describe(channel.reply("d2")) == "thread never-made THREAD_STATUS_DELETED [d2]"

    channel.send("c1", create_thread_request={"thread_id": "t-2", "model": f"mock/{MODELS[0]}"})
    assert "create_thread_request.cli_secret" in error_of(channel.reply("c1"))
    channel.send("c2", create_thread_request={"thread_id": "../escape", "model": f"mock/{MODELS[0]}", "cli_secret": "s"})
    assert "../escape" in error_of(channel.reply("c2"))
    channel.send("x1", codex_configuration_request={"auth_type": rig.plane.pb.CODEX_AUTH_TYPE_API_KEY})
    assert "Codex" in error_of(channel.reply("x1"))
    assert rig.llm.requests() == []
