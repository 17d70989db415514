"""YAML without alias bombs: a document's node graph is measured before anything is built from it.

Aliases make a tree of a few hundred bytes stand for billions of nodes ("billion laughs"); anything
that walks the parsed data (variable expansion, validation, dumping) then never ends. Composing the
graph is cheap (an alias is a reference), so the graph is walked once with a budget first, counting
every visit through an alias as the walkers after it would.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 20_000  # a spec or a world is a few hundred nodes; this is a hundred times that
MAX_DEPTH = 40


class TooLarge(ValueError):
    """More nodes (aliases expanded) or deeper nesting than a document of ours ever has."""

    def __init__(self, max_nodes: int = MAX_NODES) -> None:
        super().__init__(f"more than {max_nodes} nodes or {MAX_DEPTH} levels (recursive aliases?)")


def check_node_budget(node: yaml.Node | None, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> None:
    """TooLarge when the graph under `node`, aliases expanded, exceeds the budget. Iterative, and it
    stops at the first node over the budget, so a bomb costs at most `max_nodes` steps."""
    if node is None:
        return
    count = 0
    stack: list[tuple[yaml.Node, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if count > max_nodes or depth > max_depth:
            raise TooLarge(max_nodes)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in current.value)


def safe_load_bounded(text: str, max_nodes: int = MAX_NODES) -> Any:
    """yaml.safe_load with the node budget checked before any object is constructed; TooLarge or a
    yaml.YAMLError otherwise."""
    # libyaml's loader when PyYAML has it (the same nodes, ~10x faster: an exported world is large).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        check_node_budget(node, max_nodes)
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


Loc = tuple[str | int, ...]


def node_lines(node: yaml.Node | None, max_nodes: int = MAX_NODES) -> tuple[dict[Loc, int], dict[Loc, str]]:
    """The line (1-based) of every mapping key and list item by its path, and every scalar's text as
    written (`0123`, `no`), for `FILE:LINE:` messages. TooLarge past the budget, as above."""
    lines: dict[Loc, int] = {}
    raw: dict[Loc, str] = {}
    if node is None:
        return lines, raw
    lines[()] = node.start_mark.line + 1
    count = 0
    stack: list[tuple[yaml.Node, Loc]] = [(node, ())]
    while stack:
        current, loc = stack.pop()
        count += 1
        if count > max_nodes or len(loc) > MAX_DEPTH:
            raise TooLarge(max_nodes)
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode):
                    child = (*loc, key_node.value)
                    lines[child] = key_node.start_mark.line + 1
                    stack.append((value_node, child))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                child = (*loc, index)
                lines[child] = item.start_mark.line + 1
                stack.append((item, child))
        elif isinstance(current, yaml.ScalarNode):
            raw[loc] = current.value
    return lines, raw


def load_with_lines(text: str, max_nodes: int = MAX_NODES) -> tuple[Any, dict[Loc, int]]:
    """safe_load_bounded, plus the line of every field (node_lines); TooLarge or a yaml.YAMLError."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        check_node_budget(node, max_nodes)
        lines = node_lines(node, max_nodes)[0]
        return (loader.construct_document(node) if node is not None else None), lines
    finally:
        loader.dispose()
