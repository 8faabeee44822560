"""`gantry runner --protocol 0.7` says what CompanyHelm's runner (v0.3.0)
says, message for message, under a control plane Gantry did not write:
the exact sequence of kinds, statuses and request ids of a full turn, an
interrupted turn, a steer, a failed turn and a heartbeat mid-turn; one
token usage update per model response; the thread named after its first
message. Each scenario's whole conversation is also compared, line for
line, with that runner's (recorded/, derived from its source: recorded.py)."""

import recorded
from conftest import BLOCKED, describe, is_turn_completed, items, reply, shell

THREAD = "t-1"


def message(text, **fields):
    """A 0.7.0 CreateUserMessageRequest of THREAD."""
    return {"thread_id": THREAD, "text": text, **fields}


def with_usage(step, prompt, completion):
    """`step` reporting `prompt` input and `completion` output tokens."""
    step["reply"]["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
    return step


def said(messages):
    return [describe(m) for m in messages]


def until_heartbeat(channel, request_id):
    """Sends a heartbeat and returns what the runner said up to its answer:
    what it had to say before, in order (the channel is one stream)."""
    channel.send(request_id, heartbeat_request={})
    return channel.until(lambda m: describe(m) == f"heartbeat [{request_id}]")


NAMED = f"thread {THREAD} named 'run the build' [-]"


def test_a_full_turn_is_said_as_companyhelms_runner_says_it(start_runner):
    rig = start_runner([shell("echo built"), reply("Built.")], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("run the build"))
    turn = channel.until(is_turn_completed)
    assert said(turn) == [
        "turn TURN_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {THREAD} [-]",
        "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]",
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {THREAD} [-]",
        NAMED,
        "turn TURN_STATUS_COMPLETED [m1]",
    ]
    _, _, started, done, _, answer = items(turn)
    # A command is said running once its process exists: with its pid,
    # the one it ends with; its text is its command line.
    pid = started.command_execution_item.process_id
    assert pid.isdigit() and pid == done.command_execution_item.process_id, (started, done)
    assert started.text == done.text == "echo built"
    assert "built" in done.command_execution_item.output
    assert answer.text == "Built."
    # Nothing more: the turn's end is the last word.
    assert said(until_heartbeat(channel, "h1")) == ["heartbeat [h1]"]
    # Side by side with CompanyHelm's runner (after the thread's creation).
    recorded.check("full_turn", channel.log[1:])


def test_each_model_response_reports_its_own_usage_and_the_threads(start_runner):
    steps = [
        with_usage(shell("echo one"), 100, 10),
        with_usage(reply("Two."), 150, 20),
        with_usage(reply("Three."), 200, 30),
    ]
    rig = start_runner(steps, protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("count"))
    turn = channel.until(is_turn_completed)
    usages = [m.thread_token_usage_update for m in turn if m.WhichOneof("payload") == "thread_token_usage_update"]
    turn_id = turn[0].turn_update.sdk_turn_id
    # last_usage: that response; total_usage: the thread's so far; the
    # model's context window (gpt-4.1's, from the catalog).
    assert [
        (u.sdk_turn_id, u.last_usage.input_tokens, u.last_usage.output_tokens, u.last_usage.total_tokens, u.total_usage.total_tokens, u.model_context_window)
        for u in usages
    ] == [(turn_id, 100, 10, 110, 110, 1047576), (turn_id, 150, 20, 170, 280, 1047576)]

    # The next turn's responses count on from the thread's total.
    channel.send("m2", create_user_message_request=message("again"))
    [usage] = [m.thread_token_usage_update for m in channel.until(is_turn_completed) if m.WhichOneof("payload") == "thread_token_usage_update"]
    assert (usage.last_usage.total_tokens, usage.total_usage.total_tokens) == (230, 510)


def test_the_thread_is_named_after_its_first_message_after_every_turn(start_runner):
    rig = start_runner([reply("one"), reply("two")], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    for request_id, text in [("m1", "run the build"), ("m2", "now deploy")]:
        channel.send(request_id, create_user_message_request=message(text))
        turn = said(channel.until(is_turn_completed))
        # As CompanyHelm's runner sends codex's thread preview: right before
        # the turn's end, no request id, the first message (never a later one).
        assert turn[-2:] == [NAMED, f"turn TURN_STATUS_COMPLETED [{request_id}]"], turn
        assert sum(line.startswith(f"thread {THREAD} named") for line in turn) == 1, turn
    recorded.check("thread_name", channel.log[1:])


def test_an_interrupted_turn_ends_once_under_its_message_and_never_under_the_interrupt(start_runner):
    long = {"reply": {"text": "word " * 200, "chunk_size": 5, "delay_ms": 100}}
    rig = start_runner([long], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("run the build"))
    begun = channel.until(lambda m: describe(m) == "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]")
    assert said(begun) == [
        "turn TURN_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]",
    ]
    channel.send("i1", interrupt_turn_request={"thread_id": THREAD})
    rest = channel.until(is_turn_completed)
    # The cut message ends (with what it said so far: Gantry knows where
    # it was cut), the cut response reported no usage, the thread is
    # named, the turn completes once, under the message's request id.
    assert said(rest) == [
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        NAMED,
        "turn TURN_STATUS_COMPLETED [m1]",
    ]
    [cut] = items(rest)
    assert cut.text.startswith("word") and len(cut.text) < len("word " * 200), cut.text
    assert rest[-1].turn_update.sdk_turn_id == begun[0].turn_update.sdk_turn_id
    # And nothing ever answers the interrupt itself.
    assert said(until_heartbeat(channel, "h1")) == ["heartbeat [h1]"]
    assert not any(m.request_id == "i1" for m in channel.log)

    # With nothing running, an interrupt says again how the last turn ended
    # and that the thread is ready, still under no request id.
    channel.send("i2", interrupt_turn_request={"thread_id": THREAD})
    assert said(channel.until(lambda m: m.WhichOneof("payload") == "thread_update")) == [
        "turn TURN_STATUS_COMPLETED [-]",
        f"thread {THREAD} THREAD_STATUS_READY [-]",
    ]
    # An interrupt of a thread it does not have: an error, under no request id.
    channel.send("i3", interrupt_turn_request={"thread_id": "no-such-thread"})
    refused = channel.next()
    assert refused.WhichOneof("payload") == "request_error" and not refused.HasField("request_id"), describe(refused)
    recorded.check("interrupted", channel.log[1:])


def test_a_steer_joins_the_running_turn_and_its_message_answers_the_steer(start_runner):
    rig = start_runner([shell(BLOCKED), reply("Steered.")], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("run the build"))
    first = channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    assert said(first) == [
        "turn TURN_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {THREAD} [-]",
        "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]",
    ]
    channel.send("m2", create_user_message_request=message("and the tests", allow_steer=True))
    steered = channel.next()
    assert describe(steered) == "turn TURN_STATUS_RUNNING [m2]"
    assert steered.turn_update.sdk_turn_id == first[0].turn_update.sdk_turn_id

    rig.runner.release(THREAD)
    assert said(channel.until(is_turn_completed)) == [
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m2]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m2]",
        "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {THREAD} [-]",
        NAMED,
        "turn TURN_STATUS_COMPLETED [m1]",
    ]
    recorded.check("steer", channel.log[1:])


def test_a_heartbeat_mid_turn_is_answered_at_once_and_changes_nothing_else(start_runner):
    rig = start_runner([shell(BLOCKED), reply("Done.")], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("run the build"))
    channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")
    # Answered while the command runs: the very next message.
    assert said(until_heartbeat(channel, "h1")) == ["heartbeat [h1]"]
    rig.runner.release(THREAD)
    assert said(channel.until(is_turn_completed)) == [
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "AGENT_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "AGENT_MESSAGE ITEM_STATUS_COMPLETED [m1]",
        f"usage {THREAD} [-]",
        NAMED,
        "turn TURN_STATUS_COMPLETED [m1]",
    ]
    recorded.check("heartbeat_mid_turn", channel.log[1:])


def test_a_failed_turn_ends_with_an_error_under_its_message_as_companyhelms_does(start_runner):
    rig = start_runner([{"error": {"status": 400}}], protocol="0.7")
    channel = rig.plane.accept()
    rig.thread_v0_7(channel, THREAD)
    channel.send("m1", create_user_message_request=message("run the build"))
    turn = channel.until(lambda m: m.WhichOneof("payload") == "request_error")
    # CompanyHelm's runner, when codex reports the error: a RequestError
    # echoing the message, no turn completed, no name. Gantry's error item
    # (a type codex has not) comes before it.
    assert said(turn)[:3] == [
        "turn TURN_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_RUNNING [m1]",
        "USER_MESSAGE ITEM_STATUS_COMPLETED [m1]",
    ]
    assert said(turn)[3:-1] == [
        "ITEM_TYPE_UNKNOWN ITEM_STATUS_RUNNING [m1]",
        "ITEM_TYPE_UNKNOWN ITEM_STATUS_COMPLETED [m1]",
    ]
    error = turn[-1]
    assert error.request_id == "m1"
    assert "400" in error.request_error.error_message, error.request_error.error_message
    assert items(turn)[-1].text.startswith("Error: "), items(turn)[-1].text
    assert said(until_heartbeat(channel, "h1")) == ["heartbeat [h1]"]
    recorded.check("failed", channel.log[1:])
