"""From a source's tree of nodes to sessions: one main line and its forks.

The source gives nodes (messages, or groups of records that make one message) in
file order, each with the node it follows. The main line is the path from the
root to the node written last (where the agent was when the file ended, as the
agents themselves resume); every other branch becomes a fork from the node it
leaves the line at, following, in turn, its own most recently written path.

Sources are not always well formed: a parent may be missing (a record pointing
into another file), appear later in the file, or (in hand-made files) form a
cycle. Cycles are cut, and a node without a parent other than the first becomes
the continuation of the node written before it (not one of its own descendants).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Branch", "plan_branches"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Branch(Generic[K]):
    """One session's nodes in order; ``fork_from`` is the node (of an earlier
    branch) it forks from, None for the main line."""

    fork_from: K | None
    nodes: list[K]


def _root_of(node: K, parent: dict[K, K | None]) -> K:
    seen: set[K] = set()
    while True:
        up = parent[node]
        if up is None or node in seen:
            return node
        seen.add(node)
        node = up


def repair_parents(order: Sequence[K], parents: dict[K, K | None]) -> dict[K, K | None]:
    """Parents that make one tree: unknown parents dropped, cycles cut, and every
    root but the first node's attached after the latest earlier node outside it."""
    known = set(order)
    parent: dict[K, K | None] = {
        n: (p if p in known and p != n else None) for n, p in ((n, parents.get(n)) for n in order)
    }
    state: dict[K, int] = {}
    for node in order:
        chain: list[K] = []
        current: K | None = node
        while current is not None and state.get(current, 0) == 0:
            state[current] = 1
            chain.append(current)
            current = parent[current]
        if current is not None and state.get(current) == 1:
            parent[current] = None  # a cycle: cut it where it closed
        for n in chain:
            state[n] = 2
    if not order:
        return parent
    main_root = _root_of(order[0], parent)
    for position, node in enumerate(order):
        if parent[node] is not None or node == main_root:
            continue
        for earlier in reversed(order[:position]):
            if _root_of(earlier, parent) != node:
                parent[node] = earlier
                break
    return parent


def plan_branches(order: Sequence[K], parents: dict[K, K | None]) -> list[Branch[K]]:
    """The main line first, then each fork after the branch it forks from."""
    if not order:
        return []
    parent = repair_parents(order, parents)
    position = {n: i for i, n in enumerate(order)}
    children: dict[K, list[K]] = {n: [] for n in order}
    root: K | None = None
    for node in order:
        up = parent[node]
        if up is None:
            root = node
        else:
            children[up].append(node)
    assert root is not None
    # The position of the latest node in each subtree (post-order, iteratively).
    latest: dict[K, int] = {}
    stack: list[tuple[K, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            latest[node] = max([position[node]] + [latest[c] for c in children[node]])
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children[node])
    branches: list[Branch[K]] = []
    starts: list[tuple[K | None, K]] = [(None, root)]
    while starts:
        fork_from, node = starts.pop(0)
        line = [node]
        while children[node]:
            ordered = sorted(children[node], key=lambda c: latest[c])
            follow = ordered[-1]
            starts.extend((node, c) for c in sorted(ordered[:-1], key=lambda c: position[c]))
            node = follow
            line.append(node)
        branches.append(Branch(fork_from, line))
    return branches
