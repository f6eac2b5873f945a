"""Reading Bash command lines: which commands a line runs (:func:`split`).

- :mod:`.reader` — bash's quoting, operators, substitutions and heredocs, read into the
  simple commands of a line, with why a line cannot be read with certainty;
- :mod:`.wrappers` — commands that run another (``sudo``, ``env``, ``timeout``,
  ``xargs``, ``nohup``, ``nice``, ``exec``, ``command``, ``builtin``, ``bash -c``…);
- :mod:`.segments` — :func:`split`, the public view: every command found, and whether the
  line is uncertain.

A foundation package: it imports nothing else of tron_server.
"""

from __future__ import annotations

from .segments import Command, Split, split

__all__ = ["Command", "Split", "split"]
