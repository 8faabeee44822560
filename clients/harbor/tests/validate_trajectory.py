"""Validates ATIF trajectory files with Harbor's own models
(``harbor.models.trajectories.Trajectory``, what ``harbor`` loads a run's
``trajectory.json`` with) and prints what a test checks, as JSON.

    python validate_trajectory.py FILE...

Exit 0 with one summary line per file; exit 1 with Harbor's error when
one does not validate.
"""

import json
import sys

from harbor.models.trajectories import Trajectory


def summary(trajectory: Trajectory) -> dict:
    steps = []
    for step in trajectory.steps:
        results = step.observation.results if step.observation else []
        steps.append(
            {
                "source": step.source,
                "message": step.message,
                "reasoning": step.reasoning_content,
                "tool_calls": [
                    {"name": c.function_name, "arguments": c.arguments}
                    for c in step.tool_calls or []
                ],
                "results": [
                    {
                        "call": r.source_call_id,
                        "content": r.content,
                        "exit_code": (r.extra or {}).get("exit_code"),
                    }
                    for r in results
                ],
                "prompt_tokens": step.metrics.prompt_tokens if step.metrics else None,
                "completion_tokens": (
                    step.metrics.completion_tokens if step.metrics else None
                ),
                "duration_ms": (step.extra or {}).get("duration_ms"),
            }
        )
    fm = trajectory.final_metrics
    return {
        "schema_version": trajectory.schema_version,
        "session_id": trajectory.session_id,
        "agent": trajectory.agent.name,
        "version": trajectory.agent.version,
        "model": trajectory.agent.model_name,
        "tools": len(trajectory.agent.tool_definitions or []),
        "steps": steps,
        "total_prompt_tokens": fm.total_prompt_tokens if fm else None,
        "total_completion_tokens": fm.total_completion_tokens if fm else None,
        "total_steps": fm.total_steps if fm else None,
    }


def main() -> int:
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            trajectory = Trajectory.model_validate_json(text)
        except ValueError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(summary(trajectory)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
