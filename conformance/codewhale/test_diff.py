"""The differential test: diff/script.json replayed against Gantry (`gantry
serve --codewhale-addr` and `gantry codewhale --stdio`) and every answer
compared with the reference app-server's, recorded in diff/golden/VERSION/
by diff/record.py (see diff/README.md).

Both sides go through diff/normalise.py, which loosens only generated
values (ids, timestamps, temporary paths) and what the protocol leaves to
the implementation (the service name, the model list's contents). Then
the status, the headers the reference sets and every JSON value must
match; exchanges where the reference calls no model (`judge: shape`:
`/prompt`, thread `message`) must match in shape. A stdio exchange is
judged against its HTTP twin's golden through the reference's dispatch
(normalise.expected_stdio): 0.8.59's binary serves no stdio.

What differs and may is in ALLOWED, each with its reason; an entry that
matches nothing fails the test too, so the list only shrinks."""

import fnmatch
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "diff"))
import normalise  # noqa: E402
import pytest  # noqa: E402
from conftest import TOKEN, Server, environment, write_config  # noqa: E402
from harness import binary  # noqa: E402
from v0_10 import ALLOWED_0_10, ENGINE, as_stdio, engine_problems  # noqa: E402

# The model's answers for the turns Gantry runs (a message and two prompts
# per transport), with room to spare.
STEPS = [{"reply": {"text": f"Answer {n}."}} for n in range(1, 13)]

# Differences that stay: (transport, exchange, path, reason). Paths are
# fnmatch patterns over "status", "headers.NAME", "body.KEY..." (HTTP) and
# "message.KEY..." (stdio). Keep in step with "Where Gantry answers
# differently from the reference, and why" in docs/src/protocols/codewhale.md.
ALLOWED = [
    # Security: what the reference lets through and Gantry refuses.
    ("http", "cors-*", "*",
     "Host/Origin guard: a page of another origin (localhost:3000 included, which the reference "
     "lets through by default) cannot drive the agent, token or not (DNS rebinding)"),
    ("http", "tool-missing-call", "*",
     "no /tool: Gantry runs a tool only inside a thread's turn, under its approval policy and "
     "sandbox, never on a bare request"),
    ("*", "thread-start-nonexistent-cwd", "*",
     "a workspace that does not exist is refused: the thread's tools would run nowhere"),
    # A real engine where the reference has none.
    ("*", "*", "*.thread.status", "a thread is running only while a turn runs; the reference marks "
     "every thread it touched running"),
    ("*", "*", "*.threads.*.status", "as thread.status"),
    ("*", "*", "*.cli_version", "the version of the serving program"),
    ("*", "thread-*", "*.model", "the model that serves the thread; the reference has none (`auto`)"),
    ("*", "thread-*", "*.model_provider", "the provider that serves the thread; the reference names "
     "`deepseek` whatever is configured"),
    ("http", "thread-list-limit", "body.threads.*", "which two threads: both list the most "
     "recently updated first, and every thread here was made within the reference's one-second "
     "clock tick, so it returns the first two it stored"),
    ("*", "thread-message", "*.data.turn_id", "the turn Gantry started, to follow its frames"),
    ("*", "thread-read-after-message", "*.data.history.0.item", "the message as Gantry's log has it"),
    ("*", "thread-message-unknown", "*", "a message to a thread that does not exist runs nothing: "
     "Gantry says `missing` where the reference says `accepted`"),
    ("*", "prompt*", "*.events.0.*", "a real turn's frames start with turn_started"),
    ("*", "prompt-*unknown-thread", "*.message", "the reference's text is its store's error"),
    ("*", "prompt-unknown-thread", "body.output", "the reference's text is its store's error"),
    ("*", "*capabilities", "*.data.routes*", "the routes Gantry serves"),
    ("*", "*capabilities", "*.data.events*", "the frames Gantry sends"),
    ("*", "thread-fork-overrides", "*goal", "a fork is a copy of the thread, its goal included"),
    ("*", "config-*", "*.values.providers.*", "Gantry's provider registry"),
    # Configuration: what the config file holds, and how keys are masked.
    ("*", "config-*", "*.values.api_key", "the engine masks a key its own way (`sk-...3456`) "
     "and never hands one out"),
    ("*", "config-get-api-key*", "*.data.value", "as values.api_key"),
    ("*", "config-*", "*.values.provider", "the provider of the default model, as configured "
     "(the reference's default is `deepseek`)"),
    ("*", "config-get-provider", "*.data.value", "as values.provider"),
    ("*", "config-*", "*.values.base_url", "the default provider's base_url, as configured"),
    ("*", "config-get-base-url", "*.data.value", "as values.base_url"),
    ("*", "config-*", "*.values.model", "Gantry always has a default model"),
    ("*", "config-get-model", "*.data.value", "as values.model"),
    ("*", "config-unset-model", "*", "Gantry always has a default model: unsetting it is "
     "refused (set another)"),
]


def allowed(version, transport, name, path):
    for entry in allowances(version):
        t, exchange, pattern, _reason = entry
        if fnmatch.fnmatchcase(transport, t) and fnmatch.fnmatchcase(name, exchange) \
                and fnmatch.fnmatchcase(path, pattern):
            return entry
    return None


def allowances(version):
    return ALLOWED_0_10 if version.startswith("0.10") else ALLOWED


def goldens(version, transport):
    directory = normalise.golden_dir(version, transport)
    if not os.path.isdir(directory):
        return None
    out = {}
    for file in sorted(os.listdir(directory)):
        with open(os.path.join(directory, file)) as f:
            answer = json.load(f)
        out[answer["exchange"]["name"]] = answer
    return out


def wait_idle(base, ctx, exchange):
    """After a message, waits for its turn to end (the reference's
    message returns at once and runs nothing; Gantry's turn runs on)."""
    body = exchange.get("body") or exchange.get("params") or {}
    if not (exchange.get("judge") == "shape" and "thread_id" in body):
        return
    thread_id = ctx.substitute(body["thread_id"])
    deadline = time.monotonic() + normalise.HANG_GUARD
    probe = {"name": "wait", "method": "POST", "path": "/thread",
             "body": {"kind": "read", "thread_id": thread_id}}
    while time.monotonic() < deadline:
        _, _, answer = normalise.http_call(base, TOKEN, probe, ctx)
        if answer.get("thread", {}).get("status") != "running":
            return
        time.sleep(0.05)
    raise AssertionError(f"thread {thread_id} did not become idle")


def by_id(value):
    """`value` with every listing of threads sorted by id: both servers list
    the most recently updated first, and the reference's clock counts
    seconds, so threads made within one second come in an order of its
    store's making. Which threads, and each one's fields, are still compared."""
    if isinstance(value, dict):
        out = {k: by_id(v) for k, v in value.items()}
        if isinstance(out.get("threads"), list):
            out["threads"] = sorted(out["threads"], key=lambda t: json.dumps(t.get("id")))
        return out
    if isinstance(value, list):
        return [by_id(v) for v in value]
    return value


def judge(expected, actual, how, prefix):
    expected, actual = by_id(expected), by_id(actual)
    if how == "shape":
        return normalise.shape_differences(expected, actual, prefix)
    return normalise.differences(expected, actual, prefix)


def replay_http(tmp_path, session, version, fallback):
    server = Server(tmp_path, STEPS, version)
    try:
        paths = {"workspace": str(server.workspace), "nowhere": str(tmp_path / "no" / "such" / "dir"),
                 "config": str(tmp_path / "config.toml"), "llm": server.llm.root_url,
                 "tmp": str(tmp_path)}
        ctx = normalise.Context(paths, fallback)
        return normalise.run_http(server.base, TOKEN, session["exchanges"], ctx,
                                  after=lambda e, c: wait_idle(server.base, c, e))
    finally:
        server.stop()


def replay_stdio(tmp_path, session, version, fallback):
    from harness import MockLlm
    llm = MockLlm(STEPS, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [binary("GANTRY_BIN"), "--config", str(write_config(tmp_path, llm)), "codewhale", "--stdio",
         "--protocol", version, "--workspace", str(workspace), "--storage-backend", "memory"],
        cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=environment(tmp_path),
    )
    peer = normalise.StdioPeer(proc)
    paths = {"workspace": str(workspace), "nowhere": str(tmp_path / "no" / "such" / "dir"),
             "config": str(tmp_path / "config.toml"), "llm": llm.root_url, "tmp": str(tmp_path)}
    ctx = normalise.Context(paths, fallback)

    def settle(exchange, ctx):
        params = exchange.get("params") or {}
        if exchange.get("judge") != "shape" or "thread_id" not in params:
            return
        deadline = time.monotonic() + normalise.HANG_GUARD
        while time.monotonic() < deadline:
            peer.send(json.dumps({"jsonrpc": "2.0", "id": "settle", "method": "thread/read",
                                  "params": {"thread_id": ctx.substitute(params["thread_id"])}}))
            answer = peer.answer()
            if answer.get("result", {}).get("thread", {}).get("status") != "running":
                return
            time.sleep(0.05)
        raise AssertionError("the thread did not become idle")

    try:
        return normalise.run_stdio(peer, session["exchanges"], ctx, after=settle)
    finally:
        proc.kill()
        proc.wait()
        llm.close()


def compare(version, script, http_answers, stdio_answers):
    """Every difference: [(transport, exchange, path, expected, actual)],
    and the names of the exchanges judged."""
    sessions = {s["transport"]: s for s in script["sessions"]}
    http_golden = goldens(version, "http")
    assert http_golden, f"no HTTP goldens for {version}: run diff/record.py (diff/README.md)"
    stdio_golden = goldens(version, "stdio")
    found = []
    judged = {"http": [], "stdio": []}
    for exchange, actual in zip(sessions["http"]["exchanges"], http_answers):
        name = exchange["name"]
        expected = http_golden.get(name)
        assert expected, f"http exchange {name} has no golden: re-record (diff/README.md)"
        judged["http"].append(name)
        how = exchange.get("judge", "exact")
        diffs = []
        if expected["status"] != actual["status"]:
            diffs.append(("status", expected["status"], actual["status"]))
        for header in set(expected["headers"]) | set(actual["headers"]):
            e = expected["headers"].get(header, "<absent>")
            a = actual["headers"].get(header, "<absent>")
            if e != a:
                diffs.append((f"headers.{header}", e, a))
        diffs += judge(expected["body"], actual["body"], how, "body")
        found += [("http", name, *d) for d in diffs]
    for number, (exchange, actual) in enumerate(zip(sessions["stdio"]["exchanges"], stdio_answers), 1):
        name = exchange["name"]
        if stdio_golden and name in stdio_golden:
            expected = as_stdio(stdio_golden[name]["message"])
        elif exchange.get("twin"):
            expected = normalise.expected_stdio(http_golden[exchange["twin"]], exchange, number)
        else:
            continue
        judged["stdio"].append(name)
        diffs = judge(expected, actual["message"], exchange.get("judge", "exact"), "message")
        found += [("stdio", name, *d) for d in diffs]
    return found, judged


@pytest.mark.parametrize("version", ["0.8.59", "0.10.2"])
def test_gantry_answers_as_the_reference_does(tmp_path, version):
    script = normalise.load_script(version)
    fallback = script.get("fallback")
    sessions = {s["transport"]: s for s in script["sessions"]}
    (tmp_path / "http").mkdir()
    (tmp_path / "stdio").mkdir()
    http_answers = replay_http(tmp_path / "http", sessions["http"], version, fallback)
    stdio_answers = replay_stdio(tmp_path / "stdio", sessions["stdio"], version, fallback)
    found, judged = compare(version, script, http_answers, stdio_answers)

    entries = allowances(version)
    used = set()
    unexplained = []
    for transport, name, path, expected, actual in found:
        entry = allowed(version, transport, name, path)
        if entry is None:
            unexplained.append((transport, name, path, expected, actual))
        else:
            used.add(entries.index(entry))
    # What the reference could not do for want of an engine is judged by the
    # shapes of its source instead.
    answers = {"http": http_answers, "stdio": stdio_answers}
    for transport, session in sessions.items():
        for exchange, answer in zip(session["exchanges"], answers[transport]):
            entry = allowed(version, transport, exchange["name"], "*")
            if entry and entry[3].startswith(ENGINE):
                for problem in engine_problems(transport, exchange["name"], exchange, answer):
                    unexplained.append((transport, exchange["name"], "engine", "", problem))
    differing = {(t, n) for t, n, *_ in found}
    report = {
        "exchanges": {t: len(s["exchanges"]) for t, s in sessions.items()},
        "judged": {t: len(v) for t, v in judged.items()},
        "matching": {t: len([n for n in v if (t, n) not in differing]) for t, v in judged.items()},
        "unexplained": unexplained,
        "differences": found,
    }
    out = os.environ.get("GANTRY_DIFF_REPORT")
    if out:
        out = out.replace("{version}", version) if "{version}" in out else f"{out}.{version}"
        with open(out, "w") as f:
            json.dump(report, f, indent=1, default=str)
    stale = [entries[i] for i in range(len(entries)) if i not in used]
    lines = [f"  {t} {n} {p}: reference {json.dumps(e, default=str)[:300]}, "
             f"gantry {json.dumps(a, default=str)[:300]}" for t, n, p, e, a in unexplained]
    assert not unexplained, "Gantry answers differently from the reference:\n" + "\n".join(lines)
    assert not stale, f"allowed differences no longer seen (drop them): {stale}"
