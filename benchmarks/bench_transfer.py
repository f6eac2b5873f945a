"""Export and import of the search benchmark's database (1,000,000 events by
default), against SQLite's own ``.dump`` and restore of the same file in the
same run as the floor.

    uv run --group bench python benchmarks/bench_transfer.py [--events 1000000]

Each step runs in a process of its own, which reports its wall time and its
peak resident memory (``ru_maxrss``): export streams, so its memory must not
grow with the database. The source database is the one ``bench_store.py
search`` builds and caches in ``benchmarks/.data/`` (built here if missing).

- ``tron export``: ``tron_events.transfer.export_jsonl(store, file, all=True)``
  (what ``tron-db export --all -o FILE`` runs);
- ``tron import``: ``tron_events.transfer.import_jsonl`` of that file into a new
  database (``tron-db import FILE``): every payload validated, every session
  checked, the search index written, one transaction per session;
- ``sqlite3 .dump`` / ``sqlite3 restore``: the ``sqlite3`` shell dumping the
  source as SQL text and running that text into a new file (its tables, FTS
  shadow tables and indexes, in one transaction).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: ``ru_maxrss`` would carry
    the parent's over ``exec``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(step: str, src: str, dst: str) -> None:
    """One measured step, in its own process: prints JSON with seconds and peak RSS."""
    from tron_events import EventStore
    from tron_events.transfer import export_jsonl, import_jsonl

    rss_before = _peak_rss_mb()
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if step == "export":
        with EventStore.open(src, read_only=True) as store, open(dst, "wb") as fh:
            summary = export_jsonl(store, fh, all=True)
        out["events"] = summary.events
        out["sessions"] = summary.sessions
    else:
        with EventStore.open(f"sqlite:///{dst}") as store:
            result = import_jsonl(store, src)
        assert result.ok, result.describe()
        out["events"] = result.events_imported
        out["sessions"] = result.sessions_imported
    out["seconds"] = time.perf_counter() - t0
    out["rss_mb_before"] = rss_before
    out["rss_mb_peak"] = _peak_rss_mb()
    print(json.dumps(out))


def _run_child(step: str, src: str, dst: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "_child", step, src, dst],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def _timed_shell(command: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["sh", "-c", command], check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--keep", action="store_true", help="keep the files written")
    args = parser.parse_args()

    from bench_store import DATA, SEARCH_DB_VERSION, build_search_db

    source = DATA / f"search-{args.events // 1000}k-v{SEARCH_DB_VERSION}.db"
    if not source.with_suffix(".json").exists():
        print(f"building {source} (once; cached) …", flush=True)
        build_search_db(source, args.events, args.sessions, 10)
    sqlite3_shell = shutil.which("sqlite3")
    if sqlite3_shell is None:
        sys.exit("the sqlite3 shell is needed for the floor (apt-get install sqlite3)")
    DATA.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="transfer-", dir=DATA))
    try:
        conn = sqlite3.connect(source)
        (n_events,) = conn.execute("SELECT count(*) FROM events").fetchone()
        conn.close()
        jsonl = work / "all.jsonl"
        size = source.stat().st_size / 1e9
        print(f"{source.name}: {n_events:,} events, {size:.2f} GB", flush=True)

        export = _run_child("export", f"sqlite:///{source}", str(jsonl))
        print(f"tron export: {export}", flush=True)
        imported = _run_child("import", str(jsonl), str(work / "imported.db"))
        print(f"tron import: {imported}", flush=True)
        dump = work / "dump.sql"
        dump_s = _timed_shell(f"{sqlite3_shell} '{source}' .dump > '{dump}'")
        print(f"sqlite3 .dump: {dump_s:.1f} s", flush=True)
        restore_s = _timed_shell(f"{sqlite3_shell} '{work / 'restored.db'}' < '{dump}'")
        print(f"sqlite3 restore: {restore_s:.1f} s", flush=True)

        check = sqlite3.connect(work / "imported.db")
        (copied,) = check.execute("SELECT count(*) FROM events").fetchone()
        (indexed,) = check.execute("SELECT count(*) FROM events_fts").fetchone()
        check.close()
        assert copied == n_events, (copied, n_events)

        def rate(seconds: float) -> str:
            return f"{n_events / seconds:,.0f} events/s"

        rows = [
            ("tron export (JSONL)", export["seconds"], export["rss_mb_peak"]),
            ("sqlite3 .dump (SQL text)", dump_s, None),
            ("tron import (JSONL, validated, indexed)", imported["seconds"],
             imported["rss_mb_peak"]),
            ("sqlite3 restore (SQL text)", restore_s, None),
        ]  # fmt: skip
        print()
        print("| step | time | rate | peak memory |")
        print("|---|---|---|---|")
        for name, seconds, rss in rows:
            memory = f"{rss:,.0f} MB" if rss is not None else "—"
            print(f"| {name} | {seconds:,.1f} s | {rate(seconds)} | {memory} |")
        print()
        print(
            f"export / .dump time: {export['seconds'] / dump_s:.2f}×; "
            f"import / restore time: {imported['seconds'] / restore_s:.2f}×; "
            f"round trip: {(export['seconds'] + imported['seconds']) / (dump_s + restore_s):.2f}×"
        )
        print(
            f"files: JSONL {jsonl.stat().st_size / 1e9:.2f} GB, SQL dump "
            f"{dump.stat().st_size / 1e9:.2f} GB; imported search rows: {indexed:,}"
        )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "_child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
