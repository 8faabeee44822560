"""The control plane's requests about agents, threads and skill packages:
each answered once, echoing its request_id, with an update or a
RequestError saying why not."""

from conftest import BLOCKED, MODELS, describe, items, shell, user_message


def error_of(message):
    """The RequestError's text; fails on any other answer."""
    assert message.WhichOneof("payload") == "request_error", describe(message)
    return message.request_error.error_message


def test_agents_are_created_for_the_gantry_sdk_only_and_deleted(start_runner):
    rig = start_runner()
    channel = rig.plane.accept()
    channel.send("r1", create_agent_request={"agent_id": "a1", "agent_sdk": "gantry"})
    assert describe(channel.reply("r1")) == "agent a1 AGENT_STATUS_READY [r1]"
    channel.send("r2", create_agent_request={"agent_id": "a2", "agent_sdk": "codex"})
    assert "codex" in error_of(channel.reply("r2"))
    # A 0.2.0 control plane sends no request id: the answer carries none.
    channel.send(None, create_agent_request={"agent_id": "a3", "agent_sdk": "gantry"})
    assert describe(channel.next()) == "agent a3 AGENT_STATUS_READY [-]"
    channel.send("r3", delete_agent_request={"agent_id": "a1"})
    assert describe(channel.reply("r3")) == "agent a1 AGENT_STATUS_DELETED [r3]"
    # A deleted agent has no threads to create.
    channel.send("r4", create_thread_request={"agent_id": "a1", "model": f"mock/{MODELS[0]}"})
    assert "a1" in error_of(channel.reply("r4"))
    assert rig.llm.requests() == []


def test_a_thread_is_created_in_its_own_workspace_with_a_served_model(start_runner):
    rig = start_runner()
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel, model="mock/o4-mini", reasoning_level="high")
    assert thread
    assert rig.runner.workspace(thread).is_dir()

    # Each refusal names what is wrong.
    channel.send("r1", create_thread_request={"agent_id": "nobody", "model": f"mock/{MODELS[0]}"})
    assert "nobody" in error_of(channel.reply("r1"))
    channel.send("r2", create_thread_request={"agent_id": "a1", "model": ""})
    assert "create_thread_request.model" in error_of(channel.reply("r2"))
    assert [p.name for p in rig.runner.workspaces.iterdir()] == [thread]


def test_a_thread_deleted_mid_turn_ends_the_turn_and_takes_no_more_messages(start_runner):
    rig = start_runner([shell(BLOCKED)])
    channel = rig.plane.accept()
    thread = rig.agent_and_thread(channel)
    # Only the thread's agent may talk to it.
    channel.send("r1", create_user_message_request=user_message(thread, "hi", agent_id="someone-else"))
    assert "someone-else" in error_of(channel.reply("r1"))
    channel.send("m1", create_user_message_request=user_message(thread, "long job"))
    channel.until(lambda m: describe(m) == "COMMAND_EXECUTION ITEM_STATUS_RUNNING [m1]")

    # Deleting it stops the command (it is never released) and ends the turn.
    channel.send("r2", delete_thread_request={"agent_id": "a1", "thread_id": thread})
    said = channel.until_said(
        "COMMAND_EXECUTION ITEM_STATUS_COMPLETED [m1]",
        "turn TURN_STATUS_COMPLETED [m1]",
        f"thread {thread} THREAD_STATUS_DELETED [r2]",
    )
    [command] = [u.command_execution_item for u in items(said) if u.HasField("command_execution_item")]
    assert "released" not in command.output, command.output
    channel.send("r3", create_user_message_request=user_message(thread, "still there?"))
    assert thread in error_of(channel.reply("r3"))
    channel.send("r4", delete_thread_request={"agent_id": "a1", "thread_id": "no-such-thread"})
    assert "no-such-thread" in error_of(channel.reply("r4"))
    assert len(rig.llm.requests()) == 1, "only the turn's first request reached the model"


def test_a_skill_package_installs_into_the_agent(start_runner, tmp_path):
    rig = start_runner()
    channel = rig.plane.accept()
    rig.agent_and_thread(channel)
    package = tmp_path / "packages" / "reviewer"
    package.mkdir(parents=True)
    (package / "SKILL.md").write_text("---\nname: reviewer\ndescription: Reviews diffs\n---\nRead the diff first.\n")
    channel.send("s1", install_skills_mp_request={"agent_id": "a1", "package_name": str(package)})
    installed = channel.reply("s1")
    assert describe(installed) == f"skill {package} SKILL_MP_STATUS_INSTALLED [s1]"
    assert installed.skill_mp_update.agent_id == "a1"
    # The skill landed in the runner's data, not in the package.
    copies = list(rig.runner.data_dir.rglob("reviewer/SKILL.md"))
    assert len(copies) == 1 and "Read the diff first." in copies[0].read_text(), copies

    missing = tmp_path / "no-such-package"
    channel.send("s2", install_skills_mp_request={"agent_id": "a1", "package_name": str(missing)})
    assert error_of(channel.reply("s2"))
