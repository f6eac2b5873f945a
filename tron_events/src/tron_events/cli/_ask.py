"""Asking before a command deletes what users wrote: on a terminal, a typed
``yes``; without one, nothing happens unless ``--yes`` was given."""

from __future__ import annotations

import sys


def confirm(what: str, note: str) -> bool:
    """Ask whether to do ``what`` (a clause: "deleting …"), with ``note`` (a
    sentence: what else happens first); without a terminal, say ``--yes`` is
    needed and answer no."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        print(f"{what}.\n{note} Run it again with --yes to do it.", file=sys.stderr)
        return False
    sys.stderr.write(f"{what}.\n{note} Type 'yes' to go on: ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer != "yes":
        print("nothing was changed", file=sys.stderr)
        return False
    return True
