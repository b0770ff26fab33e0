"""Paths into a JSON value and copies with one place replaced: how the property tests mutate seed manifests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]


def every_path(node: Any, path: Path = ()) -> Iterator[Path]:
    """Every place in `node`, the containers and the root included, depth first in document order."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from every_path(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from every_path(value, (*path, index))


def leaf_paths(node: Any) -> Iterator[Path]:
    """The places of `node` that hold no container (in `every_path`'s order)."""
    for path in every_path(node):
        if not isinstance(_at(node, path), (dict, list)):
            yield path


def replaced(node: Any, path: Path, value: Any) -> Any:
    """A copy of `node` with `value` at `path` (only the containers on the path are copied)."""
    if not path:
        return value
    copy = list(node) if isinstance(node, list) else dict(node)
    copy[path[0]] = replaced(node[path[0]], path[1:], value)
    return copy


def _at(node: Any, path: Path) -> Any:
    for step in path:
        node = node[step]
    return node
