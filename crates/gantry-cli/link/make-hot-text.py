#!/usr/bin/env python3
"""Remakes hot-text.txt: the functions one `gantry exec` turn runs.

Run from anywhere, after a toolchain or dependency update:

    python3 crates/gantry-cli/link/make-hot-text.py

or, after a code change (ThinLTO renames a changed module's local functions,
`NAME.llvm.HASH`), `--refine`: it keeps the listed functions the binary still
has and runs only step 2.

Needs valgrind and perf. It builds the release binaries (with the current
list), then runs the `exec_turn` bench's task (10 tool rounds, then an answer)
against the scripted model server:

1. under callgrind, unsandboxed (valgrind lacks Landlock's system calls), on
   a new data dir and on an existing one: every function the turn runs;
2. sandboxed, as users run it, under `perf record -e page-faults`: code the
   turn faults in outside the listed functions (the sandbox's setup) is
   added, and the binary is linked again, until no new function shows up.

Only the `gantry` binary's own functions are listed, sorted for a stable diff.
"""

import bisect
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
LIST = HERE / "hot-text.txt"
# The exec_turn bench's task (10 tool rounds, then an answer).
TASK = HERE.parent / "benches" / "exec_turn.json"
ROUNDS_MAX = 4
FAULT_TURNS = 4


def target_dir() -> Path:
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return Path(json.loads(meta)["target_directory"]) / "release"


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "-p", "gantry-cli", "--bins"],
        cwd=ROOT, check=True,
    )


def run_turn(bins: Path, scratch: Path, data: Path, wrap: list, extra: list) -> None:
    """One `gantry exec` turn, checked: it must end well and edit the files."""
    mock = subprocess.Popen(
        [bins / "gantry-mock-llm", "--script", TASK],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        url = mock.stdout.readline().strip()
        ws = Path(tempfile.mkdtemp(dir=scratch))
        home = scratch / "home"
        home.mkdir(exist_ok=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GANTRY_DATA_DIR": str(data)}
        subprocess.run(
            wrap + [bins / "gantry", "exec", "--base-url", url, "--model", "bench",
                    "--cwd", ws] + extra + ["write the files"],
            env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if (ws / "f5.txt").read_text() != "done\n":
            sys.exit("make-hot-text: the turn did not edit the files")
    finally:
        mock.stdin.close()
        mock.wait()


NAME = re.compile(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")


def callgrind_functions(path: Path, binary: Path) -> set:
    """The functions of `binary` that ran, from a callgrind profile."""
    objects, functions, ran = {}, {}, set()
    current_object = None
    for line in path.read_text().splitlines():
        m = NAME.match(line)
        if not m:
            continue
        kind, key, name = m.groups()
        if kind in ("ob", "cob"):
            if name:
                objects[key] = name
            if kind == "ob":
                current_object = objects[key]
        else:
            # Names are given once, on whichever line (fn or cfn) comes first.
            if name:
                functions[key] = name
            if kind == "fn" and current_object and Path(current_object).resolve() == binary:
                ran.add(functions[key])
    return ran


def symbols(binary: Path) -> list:
    """(address, size, name) of the binary's functions, by address."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary],
                         check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            found.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return sorted(found)


def faulted_functions(data: Path, binary: Path) -> set:
    """Functions whose code the gantry process faulted in, from perf."""
    out = subprocess.run(
        ["perf", "script", "-i", data, "--show-mmap-events", "-F", "pid,addr"],
        check=True, capture_output=True, text=True,
    ).stdout
    base, pid, addresses = None, None, []
    for line in out.splitlines():
        if "PERF_RECORD_MMAP2" in line:
            # The binary's first mapping, at file offset 0, is its load base.
            m = re.search(r"(\d+)/\d+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0 .*: r--p (\S+)$", line)
            if base is None and m and Path(m.group(3)).resolve() == binary:
                pid, base = m.group(1), int(m.group(2), 16)
            continue
        parts = line.split()
        if base is not None and len(parts) == 2 and parts[0].split("/")[0] == pid:
            addresses.append(int(parts[1], 16) - base)
    table = symbols(binary)
    starts = [s[0] for s in table]
    hit = set()
    for a in addresses:
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and table[i][0] <= a < table[i][0] + max(table[i][1], 1):
            hit.add(table[i][2])
    return hit


def main() -> None:
    for tool in ("valgrind", "perf", "nm"):
        if not shutil.which(tool):
            sys.exit(f"make-hot-text: {tool} is missing")
    bins = target_dir()
    binary = (bins / "gantry").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        build()
        data = scratch / "data"
        if "--refine" in sys.argv[1:]:
            # After a small change: keep what the binary still has, then
            # only the page-fault rounds.
            present = {name for _, _, name in symbols(binary)}
            listed = read_list() & present
            print(f"make-hot-text: {len(listed)} listed functions kept")
        else:
            listed = set()
            for fresh in (True, False):
                if fresh:
                    shutil.rmtree(data, ignore_errors=True)
                profile = scratch / "callgrind.out"
                run_turn(bins, scratch, data,
                         ["valgrind", "-q", "--tool=callgrind", "--demangle=no",
                          f"--callgrind-out-file={profile}"],
                         ["--sandbox", "danger-full-access"])
                listed |= callgrind_functions(profile, binary)
            print(f"make-hot-text: {len(listed)} functions ran under callgrind")
        for round_ in range(ROUNDS_MAX):
            write(listed)
            build()
            new = set()
            # Which code runs depends a little on timing (the scheduler, the
            # blocking pool): a few turns, on a new data dir and an old one.
            for turn in range(FAULT_TURNS):
                if turn == 0:
                    shutil.rmtree(data, ignore_errors=True)
                faults = scratch / "faults.data"
                run_turn(bins, scratch, data,
                         ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d",
                          "-o", str(faults), "--"], [])
                new |= faulted_functions(faults, binary) - listed
            print(f"make-hot-text: round {round_ + 1}: {len(new)} more functions faulted in")
            if not new:
                break
            listed |= new
        write(listed)


def read_list() -> set:
    if not LIST.exists():
        return set()
    lines = (line.strip() for line in LIST.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def write(names: set) -> None:
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    with open(LIST, "w") as out:
        out.write("# The functions one `gantry exec` turn runs, for the linker's\n")
        out.write("# --symbol-ordering-file (see crates/gantry-cli/build.rs).\n")
        out.write(f"# Made by make-hot-text.py with {rustc}.\n")
        for name in sorted(names):
            out.write(name + "\n")


if __name__ == "__main__":
    main()
