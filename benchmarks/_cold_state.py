"""Child process of ``bench_store.py state``: the cold resume, timed from inside.

    python benchmarks/_cold_state.py MODE DB SESSION_ID HEAD_ID POSITIONS_JSON

Prints JSON: seconds for the imports, opening the store, the first call and a
second (warm) call. MODE is tron | floor | naive.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402

mode, db, session_id, head_id, positions = sys.argv[1:6]
out: dict[str, float] = {}

if mode == "tron":
    from tron_events import EventStore

    t1 = time.perf_counter()
    store = EventStore.open(f"sqlite:///{db}")
    t2 = time.perf_counter()
    state = store.get_state_at_head(session_id)
    t3 = time.perf_counter()
    store.get_state_at_head(session_id)
    t4 = time.perf_counter()
    n = len(state.messages)
elif mode == "floor":
    import sqlite3

    import orjson

    t1 = time.perf_counter()
    conn = sqlite3.connect(db)
    t2 = time.perf_counter()

    def floor() -> int:
        rows = conn.execute(
            "SELECT position, id, parent_id, session_id, workspace_id, sequence, depth, type, "
            "timestamp, payload FROM events WHERE position IN (SELECT value FROM json_each(?)) "
            "ORDER BY position",
            (positions,),
        ).fetchall()
        return len([orjson.loads(r[9]) for r in rows])

    n = floor()
    t3 = time.perf_counter()
    floor()
    t4 = time.perf_counter()
elif mode == "naive":
    import sqlite3

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from _naive import naive_state  # the same code as the warm figure

    t1 = time.perf_counter()
    conn = sqlite3.connect(db)
    t2 = time.perf_counter()
    n = len(naive_state(conn, head_id).messages)
    t3 = time.perf_counter()
    naive_state(conn, head_id)
    t4 = time.perf_counter()
else:
    raise SystemExit(f"unknown mode {mode}")

out = {"import": t1 - T0, "open": t2 - t1, "first": t3 - t2, "second": t4 - t3, "n": n}
print(json.dumps(out))
