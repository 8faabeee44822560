"""CompanyHelm's runner's sequences (recorded/companyhelm-runner-v0.3.0.json,
derived from its source), and the check that `gantry runner --protocol 0.7`
said the same."""

import json
import pathlib

from conftest import describe

DERIVED = pathlib.Path(__file__).parent / "recorded" / "companyhelm-runner-v0.3.0.json"


def line(message):
    """`describe`, with a request error's text left out (codex's and
    Gantry's words differ; the kind and request id are what must agree)."""
    if message.WhichOneof("payload") == "request_error":
        request = message.request_id if message.HasField("request_id") else "-"
        return f"error [{request}]"
    return describe(message)


def check(scenario, messages):
    """`messages` (what the runner said after the thread was created) are,
    line for line, what CompanyHelm's runner says in `scenario`, but for
    what Gantry also sends (each of those once, where it says it)."""
    derived = json.loads(DERIVED.read_text())["scenarios"][scenario]
    gantry = [line(m) for m in messages]
    rest = list(gantry)
    for extra in derived["gantry_also_sends"]:
        assert extra in rest, f"{scenario}: Gantry no longer says {extra!r}: {gantry}"
        rest.remove(extra)
    assert rest == derived["companyhelm"], (
        f"{scenario}: Gantry said\n{gantry}\nCompanyHelm's runner says\n{derived['companyhelm']}"
    )
