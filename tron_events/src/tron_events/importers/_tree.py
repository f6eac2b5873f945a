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

from array import array
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Branch", "plan_branches", "plan_branches_indexed"]

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


def plan_branches_indexed(parents: Sequence[int]) -> list[tuple[int, array[int]]]:
    """:func:`plan_branches` for nodes ``0 … n-1`` in file order, node ``i``
    following ``parents[i]`` (-1: none), with flat arrays instead of dicts (a
    transcript can have hundreds of thousands of messages). Each branch is
    ``(fork_from, nodes)``, ``fork_from`` -1 for the main line."""
    count = len(parents)
    if not count:
        return []
    parent = array("i", (p if 0 <= p < count and p != n else -1 for n, p in enumerate(parents)))
    state = bytearray(count)  # 0 unseen, 1 on the current walk, 2 done
    for node in range(count):
        chain: list[int] = []
        current = node
        while current >= 0 and state[current] == 0:
            state[current] = 1
            chain.append(current)
            current = parent[current]
        if current >= 0 and state[current] == 1:
            parent[current] = -1  # a cycle: cut it where it closed
        for n in chain:
            state[n] = 2
    del state
    # Roots but the first node's attach after the latest earlier node outside them;
    # ``top`` finds a node's root (union-find: roots only ever merge).
    top = array("i", (p if p >= 0 else n for n, p in enumerate(parent)))

    def root_of(node: int) -> int:
        while top[node] != node:
            top[node] = top[top[node]]
            node = top[node]
        return node

    main_root = root_of(0)
    for node in range(1, count):
        if parent[node] >= 0 or node == main_root:
            continue
        for earlier in range(node - 1, -1, -1):
            if root_of(earlier) != node:
                parent[node] = earlier
                top[node] = earlier
                break
    # Children in CSR form, then the latest node of each subtree (children first).
    starts = array("i", [0] * (count + 1))
    for p in parent:
        if p >= 0:
            starts[p + 1] += 1
    for n in range(count):
        starts[n + 1] += starts[n]
    children = array("i", [0] * starts[count])
    fill = array("i", starts[:count])
    root = -1
    for n, p in enumerate(parent):
        if p < 0:
            root = n
        else:
            children[fill[p]] = n
            fill[p] += 1
    del fill
    order = array("i", [root])
    index = 0
    while index < len(order):
        node = order[index]
        order.extend(children[starts[node] : starts[node + 1]])
        index += 1
    latest = array("i", range(count))
    for node in reversed(order):
        p = parent[node]
        if p >= 0 and latest[node] > latest[p]:
            latest[p] = latest[node]
    del order
    branches: list[tuple[int, array[int]]] = []
    pending: deque[tuple[int, int]] = deque([(-1, root)])
    while pending:
        fork_from, node = pending.popleft()
        line = array("i", [node])
        while starts[node] != starts[node + 1]:
            kids = children[starts[node] : starts[node + 1]]
            follow = max(kids, key=latest.__getitem__)
            pending.extend((node, c) for c in sorted(kids) if c != follow)
            node = follow
            line.append(node)
        branches.append((fork_from, line))
    return branches
