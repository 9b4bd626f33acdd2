"""Start the simnet runner on a RUN.json and follow it to the end.

The runner is a Go test binary (synctest needs a ``*testing.T``): its own flags come after
the test flags. It prints one JSON object per line on stdout (phases, progress over
virtual time, done) and, on failure, a line for the user on stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gossiplab.backends.model import ProgressCallback
from gossiplab.backends.simnet.errors import SimnetError

TEST_NAME = "^TestSimnet$"
STDERR_FILE = "stderr.log"
TAIL_LINES = 20  # of stderr and stray stdout, shown when the runner fails


@dataclass
class Followed:
    """What the runner said on stdout: its phases in order, its warnings, the trace events
    it last counted, and anything not an event."""

    phases: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    events: int = 0
    done: bool = False
    other: list[str] = field(default_factory=list)


def command(binary: Path, config: Path, out: Path) -> list[str]:
    test_flags = ["-test.run", TEST_NAME, "-test.v=false"]
    return [str(binary), *test_flags, "-config", str(config), "-out", str(out)]


def run_runner(
    binary: Path, config: Path, out: Path, end_ns: int, progress: ProgressCallback | None
) -> Followed:
    """Run the runner to its end; raise SimnetError with its own words if it fails."""
    stderr_path = out.parent / STDERR_FILE
    followed = Followed()
    # stderr goes to a file, not a pipe: a chatty runner must never block on it.
    with (
        stderr_path.open("w", encoding="utf-8") as stderr,
        subprocess.Popen(
            command(binary, config, out),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=out.parent,
        ) as child,
    ):
        try:
            assert child.stdout is not None
            for line in child.stdout:
                _follow(line, followed, end_ns, progress)
            code = child.wait()
        except BaseException:  # Ctrl-C included: never leave the runner behind
            child.kill()
            child.wait()
            raise
    if code != 0 or not followed.done:
        raise SimnetError(_failure(code, stderr_path, followed))
    return followed


def _follow(line: str, followed: Followed, end_ns: int, progress: ProgressCallback | None) -> None:
    event = _event(line)
    if event is None:
        if line.strip() and line.strip() != "PASS":  # the test binary's own last word
            followed.other.append(line.rstrip())
        return
    kind = event.get("event")
    if kind == "phase":
        followed.phases.append(str(event.get("name", "")))
    elif kind == "warning":
        followed.warnings.append(str(event.get("text", "")))
        # Seen while the run goes on, not only in summary.json (run.simnet.warnings).
        sys.stderr.write(f"warning (simnet): {followed.warnings[-1]}\n")
        sys.stderr.flush()
    elif kind == "progress":
        followed.events = int(event.get("events", followed.events))
        if progress is not None:
            total = int(event.get("end_ns", end_ns))
            progress(min(int(event.get("virtual_ns", 0)), total), total, followed.events)
    elif kind == "done":
        followed.done = True
        if progress is not None:
            progress(end_ns, end_ns, int(event.get("events", followed.events)))


def _event(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _failure(code: int, stderr_path: Path, followed: Followed) -> str:
    said = stderr_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    tail = (said or followed.other)[-TAIL_LINES:]
    how = f"exited with code {code}" if code != 0 else "stopped without finishing the run"
    where = f" after phase '{followed.phases[-1]}'" if followed.phases else ""
    detail = "\n".join(tail) if tail else "(it said nothing)"
    return f"the simnet runner {how}{where}:\n{detail}"
