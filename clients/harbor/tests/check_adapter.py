"""Loads the Gantry adapter with Harbor's own agent loader (the path
``harbor run --agent gantry_harbor:Gantry`` takes) and runs its setup and
run against a stand-in for a task container that runs each command here,
with bash: the real ``gantry`` installs, and a scripted turn runs through
``gantry exec``. Prints what a test checks, as JSON.

    python check_adapter.py GANTRY_BINARY SCRIPTED_MODEL WORK_DIR
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harbor.agents.factory import AgentFactory  # noqa: E402
from harbor.environments.base import ExecResult  # noqa: E402
from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.trial.config import AgentConfig  # noqa: E402


class LocalEnvironment:
    """What an installed agent uses of a Harbor environment (exec,
    upload_file, default_user), run on this machine; every call recorded."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.default_user = None
        self.calls: list[dict] = []

    async def exec(self, command, user=None, env=None, cwd=None, timeout_sec=None):
        self.calls.append({"exec": command, "user": user, "env": sorted(env or {})})
        # BaseInstalledAgent.setup's own `mkdir -p /installed-agent` is a
        # container's business, not this machine's.
        if command.startswith("[ -d /installed-agent ]"):
            return ExecResult(stdout="", stderr="", return_code=0)
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd or self.workdir,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout_sec or 120,
        )
        return ExecResult(
            stdout=done.stdout, stderr=done.stderr, return_code=done.returncode
        )

    async def upload_file(self, source_path, target_path):
        self.calls.append({"upload": str(target_path)})
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source_path, target_path)


async def main(binary: str, model: str, work: Path) -> dict:
    logs = work / "logs"
    logs.mkdir(parents=True)
    workspace = work / "task"
    workspace.mkdir()
    config = AgentConfig(
        import_path="gantry_harbor:Gantry",
        model_name=model,
        # `scripted:FILE` is no LiteLLM name: passed on unchanged.
        skip_model_parsing=True,
        kwargs={
            "binary": binary,
            "install_dir": str(work / "installed"),
            "max_rounds": 10,
        },
    )
    agent = AgentFactory.create_agent_from_config(
        config,
        logs_dir=logs,
        # The task container's /logs/agent is the host's logs dir, mounted.
        environment_logs_dir=PurePosixPath(logs),
    )
    env = LocalEnvironment(workspace)
    await agent.setup(env)
    setup_calls = list(env.calls)
    env.calls.clear()
    context = AgentContext()
    await agent.run("Find out why the build fails.", env, context)
    agent.populate_context_post_run(context)
    trajectory = agent.convert_trajectory(logs)

    # The same agent for a vendor model: its key goes in the command's
    # environment, never on its command line.
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-key"
    vendor = AgentFactory.create_agent_from_config(
        AgentConfig(import_path="gantry_harbor:Gantry", model_name="anthropic/claude-sonnet-4-5"),
        logs_dir=logs,
    )
    vendor_command = vendor.build_command("do it")
    return {
        "class": type(agent).__module__ + ":" + type(agent).__name__,
        "name": agent.name(),
        "version": agent.version(),
        "atif": agent.capabilities.atif,
        "setup": setup_calls,
        "run": env.calls,
        "context": context.model_dump(mode="json"),
        "trajectory_steps": len(trajectory.steps) if trajectory else None,
        "trajectory_agent": trajectory.agent.name if trajectory else None,
        "vendor_command": vendor_command,
        "vendor_env": sorted(vendor.model_env()),
        "vendor_key_in_command": "sk-ant-test" in vendor_command,
    }


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
    print(json.dumps(result))
