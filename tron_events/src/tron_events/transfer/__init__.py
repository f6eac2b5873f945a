"""Sessions in and out: the JSONL export format, export and import.

``docs/export-format.md`` is the format's specification::

    from tron_events import EventStore
    from tron_events.transfer import export_jsonl, import_jsonl

    with EventStore.open("sqlite:///old.db") as src, open("all.jsonl", "wb") as out:
        export_jsonl(src, out, all=True)
    with EventStore.open("sqlite:///new.db") as dst:
        print(import_jsonl(dst, "all.jsonl").describe())

Importers of other agents' sessions produce the same records and hand them
to :func:`import_records`.
"""

from __future__ import annotations

from ._export import ExportSummary, NothingToExport, export_jsonl, iter_export_records
from ._import import ImportSummary, Item, import_items, import_records
from ._jsonl import import_jsonl, read_items
from .format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    BlobRecord,
    EventRecord,
    ExportFormatError,
    Header,
    NoticeRecord,
    SessionRecord,
    WorkspaceRecord,
)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "BlobRecord",
    "EventRecord",
    "ExportFormatError",
    "ExportSummary",
    "Header",
    "ImportSummary",
    "Item",
    "NothingToExport",
    "NoticeRecord",
    "SessionRecord",
    "WorkspaceRecord",
    "export_jsonl",
    "import_items",
    "import_jsonl",
    "import_records",
    "iter_export_records",
    "read_items",
]
