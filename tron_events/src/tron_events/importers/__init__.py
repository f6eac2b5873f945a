"""Importers of other agents' sessions: Claude Code, Codex CLI and pi.

Each turns a session file, or every session under a folder, into the records of
the Tron export format (``docs/export-format.md``): a header, then workspaces,
sessions and events in the documented order, plus ``notice`` records saying what
could not be expressed exactly and how it was kept. ``tron-db import --from NAME``
feeds them to ``tron_events.transfer.import_records``::

    from tron_events.importers import IMPORTERS

    for record in IMPORTERS["claude-code"](Path("~/.claude/projects").expanduser()):
        ...

Ids are deterministic (derived from the source's ids), so importing the same file
again is recognised as already present. A file that is not of the format asked
for raises :class:`ImportFormatError` (with the file and line) when the importer
is called, before any record is yielded; in a folder, such a file is skipped with
a ``notice`` and the others imported.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

from ._errors import ImportFormatError, LineTooLongError

__all__ = ["IMPORTERS", "ImportFormatError", "Importer", "LineTooLongError"]

Importer = Callable[[Path], Iterator[dict[str, Any]]]

_MODULES = {
    "claude-code": ("claude_code", "import_claude_code"),
    "codex": ("codex", "import_codex"),
    "pi": ("pi", "import_pi"),
}


def _lazy(name: str) -> Importer:
    module_name, function_name = _MODULES[name]

    def run(path: Path) -> Iterator[dict[str, Any]]:
        module = import_module(f"{__name__}.{module_name}")
        function: Importer = getattr(module, function_name)
        records = function(Path(path))
        # Reading up to the header parses a single file whole: a file that is not
        # of this format raises here, before the caller opens (or creates) anything.
        first = next(records, None)
        return records if first is None else itertools.chain([first], records)

    run.__name__ = function_name
    run.__doc__ = f"Records of the {name} session(s) at ``path`` (a file or a folder)."
    return run


#: name -> function yielding the export-format records of a file or a folder.
IMPORTERS: dict[str, Importer] = {name: _lazy(name) for name in _MODULES}
