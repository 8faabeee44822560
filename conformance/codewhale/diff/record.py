#!/usr/bin/env python3
"""Records the reference app-server's answers to script.json as goldens.

    python3 conformance/codewhale/diff/record.py --version 0.8.59 \\
        /work/ref/cw-0.8.59/bin/codewhale-app-server

starts the given binary on a free loopback port (`--host 127.0.0.1
--port N --auth-token T --config DIR/config.toml`, its working directory
DIR/ws, all in a fresh temporary directory), sends the script's HTTP
session, and writes one file per exchange to golden/VERSION/http/
(NNN-NAME.json: the request, then the status, the headers a client may
read and the body, all normalised by normalise.py). Files of an earlier
recording of the same version are replaced.

`--stdio COMMAND` records the stdio session too, from a command that
speaks the reference's stdio JSON-RPC (0.8.59's binary has none: its
main only serves HTTP, so its stdio goldens are not recorded; see
README.md). Nothing here builds the reference: see README.md.
"""

import argparse
import glob
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import normalise  # noqa: E402

TOKEN = "cw-diff-token"
# The reference's config: one key of each kind it keeps at the top level
# (the same provider key Gantry's replay configures).
REFERENCE_CONFIG = 'api_key = "sk-test-secret-key-123456"\n'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base, proc):
    deadline = time.monotonic() + normalise.HANG_GUARD
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not answer /healthz")


def paths_of(tmp):
    return {
        "workspace": os.path.join(tmp, "ws"),
        "nowhere": os.path.join(tmp, "no", "such", "dir"),
        "config": os.path.join(tmp, "config.toml"),
        "tmp": tmp,
    }


def write(version, transport, exchanges, answers):
    directory = normalise.golden_dir(version, transport)
    os.makedirs(directory, exist_ok=True)
    for old in glob.glob(os.path.join(directory, "*.json")):
        os.remove(old)
    for index, (exchange, answer) in enumerate(zip(exchanges, answers), 1):
        path = normalise.golden_path(version, transport, index, exchange["name"])
        with open(path, "w") as f:
            json.dump(answer, f, indent=2, sort_keys=False)
            f.write("\n")
    print(f"wrote {len(answers)} {transport} goldens to {directory}")


def record_http(binary, version, session):
    with tempfile.TemporaryDirectory(prefix="cw-record-") as tmp:
        tmp = os.path.realpath(tmp)
        paths = paths_of(tmp)
        os.makedirs(paths["workspace"])
        with open(paths["config"], "w") as f:
            f.write(REFERENCE_CONFIG)
        port = free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(tmp, "home")}
        proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(port), "--auth-token", TOKEN,
             "--config", paths["config"]],
            cwd=paths["workspace"], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base, proc)
            ctx = normalise.Context(paths, session.get("fallback"))
            answers = normalise.run_http(base, TOKEN, session["exchanges"], ctx)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        write(version, "http", session["exchanges"], answers)


def record_stdio(command, version, session):
    with tempfile.TemporaryDirectory(prefix="cw-record-") as tmp:
        tmp = os.path.realpath(tmp)
        paths = paths_of(tmp)
        os.makedirs(paths["workspace"])
        with open(paths["config"], "w") as f:
            f.write(REFERENCE_CONFIG)
        args = [a.replace("{config}", paths["config"]) for a in shlex.split(command)]
        proc = subprocess.Popen(args, cwd=paths["workspace"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            ctx = normalise.Context(paths, session.get("fallback"))
            answers = normalise.run_stdio(normalise.StdioPeer(proc), session["exchanges"], ctx)
        finally:
            proc.kill()
            proc.wait()
        write(version, "stdio", session["exchanges"], answers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", help="the reference codewhale-app-server binary")
    parser.add_argument("--version", required=True, help="its version: goldens go to golden/VERSION/")
    parser.add_argument("--stdio", metavar="COMMAND",
                        help="a command speaking the reference's stdio JSON-RPC ({config} is "
                             "replaced by the config file's path)")
    args = parser.parse_args()
    script = normalise.load_script(args.version)
    sessions = {s["transport"]: dict(s, fallback=script.get("fallback")) for s in script["sessions"]}
    record_http(os.path.abspath(args.binary), args.version, sessions["http"])
    if args.stdio:
        record_stdio(args.stdio, args.version, sessions["stdio"])


if __name__ == "__main__":
    main()
