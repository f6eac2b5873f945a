"""Peak memory of ``tron-db import --from claude-code`` against the length of the
transcript, for the code of this checkout and, in the same run, for an older
commit (``--before REV``, default ``HEAD~`` of the import streaming change).

    uv run python benchmarks/bench_import.py                     # 10k and 100k lines
    uv run python benchmarks/bench_import.py --lines 10000 100000 1000000
    uv run python benchmarks/bench_import.py --before none       # this checkout only
    uv run python benchmarks/bench_import.py --lines --line-mb 30 60   # one big line

Each transcript is generated (one Claude Code session, written the way Claude
Code 2.1 writes one: a prompt, an API response split over thinking/text/tool_use
records sharing ``message.id``, hook ``progress`` records chained under the
call, the ``tool_result`` with its ``toolUseResult``, a closing answer) into a
temporary folder, then imported into a new SQLite database by a ``tron-db``
subprocess; its peak resident memory is the child's ``ru_maxrss``
(``resource.getrusage(RUSAGE_CHILDREN)`` after ``wait``, each import in a fresh
intermediate process so the maxima do not mix). The older code runs from a
``git worktree`` of ``--before`` with the same interpreter and dependencies
(``PYTHONPATH`` puts its sources first).

RSS per line is ``(peak - peak of importing a 10-line transcript) / lines``:
the constant (interpreter, imports) taken out; "slope" is the growth from the
previous size, per added line (SQLite's page cache, up to 32 MB, fills while the
database grows to about 100 MB, so the slope beyond 100k lines is the importer's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSION = "5f0c2a8e-1d3b-4c8e-9a51-0b7e6f3d2c10"
CONTEXT = {
    "isSidechain": False,
    "userType": "external",
    "cwd": "/home/user/projects/bench",
    "sessionId": SESSION,
    "version": "2.1.39",
    "gitBranch": "main",
}
TEXT = (
    "The function reads the configuration once and caches it; the tests cover the "
    "missing-file case but not a file that is unreadable, so I will add that. "
)


def _uuid(n: int, kind: int) -> str:
    return f"{n:08x}-{kind:04x}-4000-8000-{n * 7 + kind:012x}"


def generate(path: Path, lines: int) -> int:
    """Write a transcript of about ``lines`` lines (whole turns) to ``path``;
    return the number of lines written."""
    written = 0
    parent: str | None = None
    t0 = 1_767_225_600_000  # 2026-01-01

    def stamp(n: int) -> str:
        ms = t0 + n * 250
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"

    with path.open("wb") as out:

        def put(record: dict[str, Any]) -> None:
            nonlocal written, parent
            record["timestamp"] = stamp(written)
            out.write(orjson.dumps({"parentUuid": parent, **CONTEXT, **record}) + b"\n")
            parent = record.get("uuid", parent)
            written += 1

        turn = 0
        while written < lines:
            turn += 1
            message = f"msg_{turn:020d}"
            tool = f"toolu_{turn:020d}"
            put({"type": "user", "message": {"role": "user", "content": f"Step {turn}: {TEXT}"},
                 "uuid": _uuid(turn, 1), "promptId": _uuid(turn, 9)})  # fmt: skip
            for kind, block in (
                (2, {"type": "thinking", "thinking": TEXT, "signature": "c2ln" * 20}),
                (3, {"type": "text", "text": TEXT}),
                (4, {"type": "tool_use", "id": tool, "name": "Read",
                     "input": {"file_path": f"/home/user/projects/bench/src/m{turn}.py"}}),
            ):  # fmt: skip
                put({"type": "assistant", "requestId": f"req_{turn}", "uuid": _uuid(turn, kind),
                     "message": {"id": message, "model": "claude-opus-4-6", "role": "assistant",
                                 "type": "message", "content": [block], "stop_reason": None,
                                 "usage": {"input_tokens": 3, "cache_read_input_tokens": 20000,
                                           "output_tokens": 120}}})  # fmt: skip
            call = _uuid(turn, 4)
            for kind in (5, 6):
                put({"type": "progress", "uuid": _uuid(turn, kind), "toolUseID": tool,
                     "parentToolUseID": tool,
                     "data": {"type": "hook_progress", "hookEvent": "PostToolUse",
                              "hookName": "PostToolUse:Read", "command": "true"}})  # fmt: skip
            parent = call
            put({"type": "user", "uuid": _uuid(turn, 7), "sourceToolAssistantUUID": call,
                 "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": tool, "content": TEXT * 2}]},
                 "toolUseResult": {"type": "text", "file": {"numLines": 40}}})  # fmt: skip
            put({"type": "assistant", "requestId": f"req_{turn:020d}b", "uuid": _uuid(turn, 8),
                 "message": {"id": message + "b", "model": "claude-opus-4-6", "role": "assistant",
                             "type": "message", "content": [{"type": "text", "text": TEXT}],
                             "stop_reason": "end_turn",
                             "usage": {"input_tokens": 3, "output_tokens": 80}}})  # fmt: skip
    return written


def _measure(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``command`` in a fresh intermediate process; its peak RSS (MB) and time."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "s = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps({'rc': p.returncode, 'seconds': s, 'rss_mb': rss,\n"
        "                  'out': p.stdout[-400:], 'err': p.stderr[-400:]}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env, check=True
    )
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _code_env(source_root: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if source_root is not None:
        paths = [str(source_root / p / "src") for p in ("tron_events", "tron_llm", "tron_server")]
        env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _with_big_result(path: Path, mb: int) -> None:
    """Make the first tool result of ``path`` ``mb`` MB long (one line that size)."""
    lines = path.read_bytes().splitlines(keepends=True)
    for n, raw in enumerate(lines):
        record = orjson.loads(raw)
        if record.get("toolUseResult"):
            record["message"]["content"][0]["content"] = "x" * (mb << 20)
            lines[n] = orjson.dumps(record) + b"\n"
            break
    path.write_bytes(b"".join(lines))


def _command(transcript: Path, db: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from tron_events.cli import main; sys.exit(main())",
            "import", "--from", "claude-code", str(transcript), "-d", str(db)]  # fmt: skip


def _import(transcript: Path, db: Path, env: dict[str, str]) -> dict[str, Any]:
    data = _measure(_command(transcript, db), env)
    if data["rc"] != 0:
        raise SystemExit(f"import failed ({data['rc']}): {data['err'] or data['out']}")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--line-mb", type=int, nargs="*", default=[],
                        help="also: 10 turns, one tool result this many MB long")  # fmt: skip
    parser.add_argument("--before", default="dbd99cd",
                        help="the commit to compare with ('none': this checkout only)")  # fmt: skip
    args = parser.parse_args()
    load = os.getloadavg()
    print(
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        folder = Path(tmp)
        contenders: dict[str, dict[str, str]] = {"after": _code_env(None)}
        if args.before != "none":
            old = folder / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old),
                            args.before], check=True, capture_output=True)  # fmt: skip
            contenders = {"before": _code_env(old), **contenders}
        try:
            rows: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in contenders}
            previous = {name: (0, 0.0) for name in contenders}
            for lines in [10, *args.lines] if args.lines else []:
                transcript = folder / f"{lines}" / f"{SESSION}.jsonl"
                transcript.parent.mkdir()
                written = generate(transcript, lines)
                size = transcript.stat().st_size
                for name, env in contenders.items():
                    db = folder / f"{name}-{lines}.db"
                    data = _import(transcript, db, env)
                    db.unlink()
                    rows[name][lines] = data
                    base = rows[name][10]["rss_mb"]
                    mb = 1024 * 1024
                    per_line = (data["rss_mb"] - base) * mb / written if lines > 10 else 0
                    done, rss = previous[name]
                    slope = (data["rss_mb"] - rss) * mb / (written - done) if lines > 10 else 0
                    previous[name] = (written, data["rss_mb"])
                    print(
                        f"{name:>6} {written:>9,} lines {size / 1e6:8.1f} MB: peak RSS "
                        f"{data['rss_mb']:7.1f} MB, {per_line:7.0f} B/line above the 10-line "
                        f"run, slope {slope:6.0f} B/line, {data['seconds']:7.1f} s",
                        flush=True,
                    )
                transcript.unlink()
            for mb in args.line_mb:
                transcript = folder / f"big{mb}" / f"{SESSION}.jsonl"
                transcript.parent.mkdir()
                generate(transcript, 100)
                _with_big_result(transcript, mb)
                for name, env in contenders.items():
                    db = folder / f"{name}-big{mb}.db"
                    data = _measure(_command(transcript, db), env)
                    db.unlink(missing_ok=True)
                    outcome = "imported" if data["rc"] == 0 else f"exit {data['rc']}"
                    print(
                        f"{name:>6} one {mb} MB line: peak RSS {data['rss_mb']:7.1f} MB, "
                        f"{outcome}: {(data['err'] or data['out']).strip().splitlines()[0][:110]}",
                        flush=True,
                    )
                transcript.unlink()
        finally:
            if args.before != "none":
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(folder / "before")], check=False)  # fmt: skip
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
