"""What every conformance suite needs to run Gantry's binaries: the paths
cargo passes, reading a process's startup line within a bound, and the
scripted mock LLM as a process. Each suite's conftest.py imports it."""

import json
import os
import re
import select
import subprocess
import time
import urllib.request

import pytest

# Fails a wait that would otherwise hang the suite.
HANG_GUARD = 30.0


def binary(var):
    """The binary cargo passes in `var` (GANTRY_BIN, GANTRY_MOCK_LLM)."""
    path = os.environ.get(var)
    if not path:
        pytest.exit(f"{var} is not set: run the suite through cargo (crates/gantry-cli/tests)", 2)
    return path


def read_line(stream, pattern, what):
    """The first match of `pattern` in the lines of `stream`, within HANG_GUARD."""
    deadline = time.monotonic() + HANG_GUARD
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if not ready:
            continue
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    raise AssertionError(f"{what} did not start; it said: {''.join(seen)!r}")


class MockLlm:
    """The scripted mock LLM server, one step per model request."""

    def __init__(self, steps, tmp_path):
        script = tmp_path / f"script-{id(self)}.json"
        script.write_text(json.dumps({"steps": steps}))
        self.proc = subprocess.Popen(
            [binary("GANTRY_MOCK_LLM"), "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            self.base_url = read_line(self.proc.stdout, r"(http://\S+)", "the mock LLM").group(1)
        except AssertionError:
            self.proc.kill()
            self.proc.wait()
            raise
        # Some clients give the base URL without the `/v1`.
        self.root_url = self.base_url.removesuffix("/v1")

    def requests(self):
        """What the model server received: [{path, headers, body}]."""
        with urllib.request.urlopen(f"{self.root_url}/_mock/requests", timeout=HANG_GUARD) as r:
            return json.load(r)

    def wait_requests(self, count):
        """Waits until the model server received `count` requests. The mock
        has no event to wait on, so this polls it, bounded by HANG_GUARD."""
        deadline = time.monotonic() + HANG_GUARD
        while len(self.requests()) < count:
            assert time.monotonic() < deadline, f"the model got {len(self.requests())} requests, not {count}"
            time.sleep(0.05)

    def close(self):
        """Stops the server: closing its stdin is its way out."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=HANG_GUARD)
