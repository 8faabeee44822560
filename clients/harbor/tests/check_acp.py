"""Harbor's ACP route (``harbor run --agent acp:gantry``) against the real
``gantry acp``, without a container:

1. Harbor's ``AcpAgent`` loads Gantry's registry entry
   (clients/acp-registry/gantry/agent.json), picks its Linux binary and
   writes the launcher it would start.
2. Harbor's own ACP runner (``acp_runner.py``, what runs in the task
   container) drives ``gantry acp`` with a scripted model through a
   prompt, choosing the model the way it does for ``-m``; ``AcpAgent``
   then turns what it recorded into Harbor's context and ATIF trajectory.
3. ``gantry acp`` with only ``ANTHROPIC_API_KEY`` in its environment (what
   a Harbor user passes with ``--ae``) offers ``anthropic/claude-sonnet-4-5``
   as a model Harbor's runner can select.

    python check_acp.py GANTRY_BINARY SCRIPTED_MODEL WORK_DIR

Prints what a test checks, as JSON.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harbor.agents.factory import AgentFactory
from harbor.agents.installed import acp_runner
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import AgentConfig

ENTRY = Path(__file__).resolve().parents[2] / "acp-registry" / "gantry" / "agent.json"


def acp_agent(logs: Path):
    config = AgentConfig(
        name="acp", kwargs={"registry_entry_path": str(ENTRY)}, skip_model_parsing=True
    )
    return AgentFactory.create_agent_from_config(config, logs_dir=logs)


def launcher(path: Path, gantry: str, args: list[str]) -> Path:
    quoted = " ".join(f"'{a}'" for a in [gantry, *args])
    path.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    path.chmod(0o755)
    return path


def gantry_env(work: Path, extra: dict[str, str]) -> dict[str, str]:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(work / "xdg"),
        "GANTRY_DATA_DIR": str(work / "data"),
        "GANTRY_ALLOW_EXPOSED_DATA_DIR": "true",
        "GANTRY_SANDBOX": "danger-full-access",
        **extra,
    }


def registry_route(work: Path) -> dict:
    agent = acp_agent(work / "entry-logs")
    kind, target = agent._select_distribution("linux-x86_64")
    return {
        "id": agent.to_agent_info().name,
        "version": agent.version(),
        "kind": kind,
        "archive": target.archive,
        "launcher": agent._build_launcher_script(kind, target),
    }


def runner_route(gantry: str, model: str, work: Path) -> dict:
    logs = work / "runner-logs"
    logs.mkdir(parents=True)
    workspace = work / "task"
    workspace.mkdir()
    launch = launcher(work / "acp-launch.sh", gantry, ["acp", "--model", model])
    env = gantry_env(
        work,
        {
            "ACP_RUNNER_PERMISSION_MODE": "allow",
            "ACP_RUNNER_AUTH_POLICY": "auto",
            "ACP_RUNNER_AGENT_ID": "gantry",
            "ACP_RUNNER_AGENT_VERSION": "0.1.0",
            "ACP_RUNNER_REQUESTED_MODEL": model,
        },
    )
    # Harbor uploads the runner beside its launcher (/installed-agent/):
    # run from its package directory, `import acp` would find Harbor's acp.py.
    runner = work / "acp_runner.py"
    shutil.copy(acp_runner.__file__, runner)
    done = subprocess.run(
        [
            sys.executable,
            str(runner),
            "--instruction=Find out why the build fails.",
            f"--logs-dir={logs}",
            f"--launcher={launch}",
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary_file = logs / "acp-summary.json"
    if not summary_file.exists():
        raise SystemExit(f"Harbor's ACP runner wrote no summary:\n{done.stdout}\n{done.stderr}")
    summary = json.loads(summary_file.read_text())
    agent = acp_agent(logs)
    context = AgentContext()
    agent.populate_context_post_run(context)
    trajectory = Trajectory.model_validate_json((logs / "trajectory.json").read_text())
    return {
        "exit_code": done.returncode,
        "output": done.stdout[-2000:] + done.stderr[-2000:],
        "error": summary.get("error"),
        "auth_methods": summary.get("auth_methods"),
        "set_model_mechanism": summary.get("set_model_mechanism"),
        "resolved_model": summary.get("resolved_session_model_id"),
        "stop_reason": (summary.get("prompt_response") or {}).get("stopReason"),
        "usage": (summary.get("prompt_response") or {}).get("usage"),
        "context": context.model_dump(mode="json"),
        "trajectory_steps": [s.source for s in trajectory.steps],
        "trajectory_tools": [
            c.function_name for s in trajectory.steps for c in s.tool_calls or []
        ],
    }


async def vendor_model(gantry: str, work: Path) -> dict:
    from acp import PROTOCOL_VERSION, spawn_agent_process
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    logs = work / "vendor-logs"
    logs.mkdir()
    client = acp_runner.HarborAcpClient(logs_dir=logs, permission_mode="allow")
    env = gantry_env(work / "vendor", {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"})
    wanted = "anthropic/claude-sonnet-4-5"
    async with spawn_agent_process(
        client, gantry, "acp", env=env, cwd=work, transport_kwargs={"stderr": None}
    ) as (conn, _process):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
            ),
        )
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        option = acp_runner._session_model_config_option(session)
        candidates = acp_runner._resolve_config_model_candidates(wanted, option)
        await conn.set_config_option(
            session_id=session.session_id, config_id=option.id, value=candidates[0]
        )
    return {"current": option.current_value, "candidates": candidates}


if __name__ == "__main__":
    gantry, model, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    result = {
        "registry": registry_route(work),
        "runner": runner_route(gantry, model, work),
        "vendor": asyncio.run(vendor_model(gantry, work)),
    }
    print(json.dumps(result))
