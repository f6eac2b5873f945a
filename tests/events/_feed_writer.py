"""A writer process for the subscription tests: appends, printing each id."""

from __future__ import annotations

import sys
import time

from tron_events import EventStore


def main(url: str, session_id: str, count: int, pause: float) -> None:
    with EventStore.open(url) as store:
        for i in range(count):
            e = store.append(session_id, "message.user", {"content": f"remote {i}"})
            print(e.id, flush=True)
            time.sleep(pause)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
