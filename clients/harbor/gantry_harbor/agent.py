"""Gantry on Harbor: installs the ``gantry`` binary into the task
environment, runs one ``gantry exec`` turn on the instruction, and hands
Harbor the run report and the ATIF trajectory Gantry writes itself.

Use: ``harbor run -d terminal-bench@2.0 -a gantry_harbor:Gantry -m
anthropic/claude-sonnet-4-5`` with ``ANTHROPIC_API_KEY`` set (see the
book's "Gantry on Terminal-Bench with Harbor").
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path, PurePosixPath
from typing import Any, override

from pydantic import Field

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory

# The key variable each vendor's models read, by the provider part of
# Harbor's ``provider/model`` name. Gantry's config (CONFIG below) names
# the same providers, so ``anthropic/claude-sonnet-4-5`` routes unchanged.
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}

# Providers on the vendors' own endpoints; each reads its key from the
# variable above (Gantry's default for a provider with no key configured).
CONFIG = """\
[providers.anthropic]
kind = "anthropic"

[providers.openai]
kind = "openai-responses"
"""

REPORT_FILENAME = "gantry-report.json"
TRAJECTORY_FILENAME = "trajectory.json"
OUTPUT_FILENAME = "gantry.txt"


class GantryOptions(InstalledAgentOptions):
    """``--ak`` options of the Gantry agent."""

    binary: str | None = Field(
        default=None,
        description=(
            "Host path of the gantry binary to upload into the environment "
            "(default: `gantry` on PATH). Build it for the task images' libc "
            "(a static musl build runs everywhere)."
        ),
    )
    binary_url: str | None = Field(
        default=None,
        description="An https URL of a gantry binary the environment downloads instead.",
    )
    install_dir: str = Field(
        default="/installed-agent/gantry",
        description="Where gantry, its config and its data dir go in the environment.",
    )
    max_rounds: int = Field(default=100, ge=1, description="Model rounds per task.")
    sandbox: str = Field(
        default="danger-full-access",
        description=(
            "gantry's sandbox for the agent's commands; the task container "
            "already is one, and tasks often need the network."
        ),
    )


class Gantry(BaseInstalledAgent):
    """Gantry (the `gantry` binary) as a Harbor installed agent."""

    capabilities = AgentCapabilities(atif=True, reasoning_effort=True)
    options_model = GantryOptions
    options: GantryOptions

    @staticmethod
    @override
    def name() -> str:
        return "gantry"

    # -- paths in the environment -------------------------------------------

    @property
    def _install_dir(self) -> PurePosixPath:
        return PurePosixPath(self.options.install_dir)

    @property
    def remote_binary(self) -> PurePosixPath:
        """Where the binary is installed."""
        return self._install_dir / "gantry"

    @property
    def remote_config(self) -> PurePosixPath:
        """Gantry's config file (providers)."""
        return self._install_dir / "config.toml"

    @property
    def remote_data_dir(self) -> PurePosixPath:
        """Gantry's data dir (its event log)."""
        return self._install_dir / "data"

    def _log_path(self, name: str) -> PurePosixPath:
        return self.environment_logs_dir / name

    # -- install ------------------------------------------------------------

    @override
    def get_version_command(self) -> str | None:
        return f"{shlex.quote(str(self.remote_binary))} --version"

    @override
    def parse_version(self, stdout: str) -> str:
        # `gantry 0.1.0`
        return stdout.strip().split()[-1] if stdout.strip() else stdout

    def _local_binary(self) -> Path:
        path = self.options.binary or shutil.which("gantry")
        if path is None:
            raise ValueError(
                "no gantry binary: pass --ak binary=PATH (or binary_url=URL), "
                "or put gantry on PATH"
            )
        binary = Path(path)
        if not binary.is_file():
            raise ValueError(f"gantry binary not found: {binary}")
        return binary

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        install_dir = shlex.quote(str(self._install_dir))
        binary = shlex.quote(str(self.remote_binary))
        await self.exec_as_root(environment, command=f"mkdir -p {install_dir}")
        if self.options.binary_url:
            if not self.options.binary_url.startswith("https://"):
                raise ValueError("binary_url must be an https URL")
            await self.ensure_system_dependencies(environment, ("curl", "ca_certificates"))
            url = shlex.quote(self.options.binary_url)
            await self.exec_as_root(
                environment, command=f"curl -fsSL {url} -o {binary}"
            )
        else:
            await environment.upload_file(self._local_binary(), str(self.remote_binary))
        await self.exec_as_root(
            environment,
            command=f"chmod 755 {binary} && {binary} --version",
        )

    @override
    async def configure(self, environment: BaseEnvironment) -> None:
        # The agent user writes the data dir.
        await self.exec_as_root(
            environment,
            command=f"mkdir -p {shlex.quote(str(self.remote_data_dir))}",
        )
        await self._upload_config_text(
            environment,
            content=CONFIG,
            remote_path=str(self.remote_config),
            filename="config.toml",
        )
        if environment.default_user is not None:
            owner = shlex.quote(str(environment.default_user))
            await self.exec_as_root(
                environment,
                command=f"chown -R {owner} {shlex.quote(str(self.remote_data_dir))}",
            )

    # -- run ----------------------------------------------------------------

    def model_env(self) -> dict[str, str]:
        """The key variable of the model's provider, from Harbor's
        environment (``--ae``, then the host's); passed in the exec's
        environment, never on its command line."""
        provider = (self.model_name or "").split("/", 1)[0]
        var = KEY_VARS.get(provider)
        if var is None:
            return {}
        value = self._get_env(var)
        return {var: value} if value else {}

    def build_command(self, instruction: str) -> str:
        """The shell command of the run (what ``run`` executes)."""
        if not self.model_name:
            raise ValueError("gantry needs a model: harbor run -m PROVIDER/MODEL")
        gantry = shlex.quote(str(self.remote_binary))
        args = [
            "--config",
            str(self.remote_config),
            "--data-dir",
            str(self.remote_data_dir),
            "exec",
            "--model",
            self.model_name,
            "--sandbox",
            self.options.sandbox,
            "--max-rounds",
            str(self.options.max_rounds),
            "--report",
            str(self._log_path(REPORT_FILENAME)),
            "--trajectory",
            str(self._log_path(TRAJECTORY_FILENAME)),
            "--json",
        ]
        if self.options.reasoning_effort:
            args += ["--reasoning", self.options.reasoning_effort]
        output = shlex.quote(str(self._log_path(OUTPUT_FILENAME)))
        return (
            f"{gantry} {shlex.join(args)} -- {shlex.quote(instruction)} "
            f"2>&1 </dev/null | tee {output}"
        )

    @override
    @with_prompt_template
    async def run(
        self,
        instruction: str,
        environment: BaseEnvironment,
        context: AgentContext,
    ) -> None:
        await self.exec_as_agent(
            environment,
            command=self.build_command(instruction),
            env=self.model_env(),
        )

    # -- results ------------------------------------------------------------

    def read_report(self) -> dict[str, Any] | None:
        """The run report gantry wrote (``--report``), from the logs dir."""
        path = self.logs_dir / REPORT_FILENAME
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            self.logger.debug(f"No gantry run report at {path}: {exc}")
            return None
        return report if isinstance(report, dict) else None

    @override
    def convert_trajectory(self, logs_dir: Path) -> Trajectory | None:
        path = logs_dir / TRAJECTORY_FILENAME
        try:
            return Trajectory.model_validate_json(path.read_text())
        except (OSError, ValueError) as exc:
            self.logger.debug(f"No valid ATIF trajectory at {path}: {exc}")
            return None

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        # Gantry writes ATIF itself: trajectory.json is already where Harbor
        # reads it; the report gives the totals (cached tokens are part of
        # the input, as Harbor counts them).
        report = self.read_report()
        if report is None:
            trajectory = self.convert_trajectory(self.logs_dir)
            if trajectory is not None and trajectory.final_metrics is not None:
                fm = trajectory.final_metrics
                context.n_input_tokens = fm.total_prompt_tokens
                context.n_cache_tokens = fm.total_cached_tokens
                context.n_output_tokens = fm.total_completion_tokens
                context.cost_usd = fm.total_cost_usd
            return
        usage = report.get("usage") or {}
        context.n_input_tokens = usage.get("input_tokens")
        context.n_cache_tokens = usage.get("cached_input_tokens")
        context.n_output_tokens = usage.get("output_tokens")
        context.cost_usd = report.get("cost_usd")
        context.metadata = {
            "gantry": {
                key: report.get(key)
                for key in (
                    "outcome",
                    "reason",
                    "failure",
                    "limit",
                    "thread_id",
                    "turn_id",
                    "model",
                    "rounds",
                    "wall_time_ms",
                    "exit_code",
                    "gantry_version",
                )
            }
        }
