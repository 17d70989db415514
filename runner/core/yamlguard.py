"""YAML without alias bombs: a document's node graph is measured before anything is built from it.

Aliases make a tree of a few hundred bytes stand for billions of nodes ("billion laughs"); anything
that walks the parsed data (variable expansion, validation, dumping) then never ends. Composing the
graph is cheap (an alias is a reference), so the graph is walked once with a budget first, counting
every visit through an alias as the walkers after it would.
"""

from __future__ import annotations

from collections.abc import Callable
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


# --- a large, plain document without its node graph ----------------------------------------------------
#
# Composing a document's node graph costs a Python object and two marks per node: a world of 10,000
# checks (2.8 MB, ~250,000 nodes) takes ~100 MiB and seconds before one value is built, and the freed
# graph leaves the process's memory fragmented. A plain document (no anchor, alias, explicit tag,
# merge key or complex key: what people write) is built here from the parser's events instead, each
# scalar resolved and constructed by the SafeLoader's own rules, so the data is the same; anything
# else goes the composed way (`_NotPlain`), with the same budget and the same errors.

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"


class _NotPlain(Exception):
    """The document uses a feature the event builder leaves to the composer."""


_NO_KEY: Any = object()  # an open mapping waits for its next key


def _from_events(text: str, max_nodes: int) -> Any:
    # One pass over the events, the open collections on a stack; the innermost one, whether it is a
    # mapping and its pending key are locals. libyaml's events are most of a load's time: the Python
    # here is kept to a few steps an event, and a plain scalar (most of them) is one lookup of its text.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        constructors = loader.yaml_constructors
        resolve = loader.resolve
        get = loader.get_event
        scalar_event, alias_event, document_start = yaml.ScalarEvent, yaml.AliasEvent, yaml.DocumentStartEvent
        mapping_start, mapping_end = yaml.MappingStartEvent, yaml.MappingEndEvent
        sequence_start, sequence_end = yaml.SequenceStartEvent, yaml.SequenceEndEvent
        scalar_node = yaml.ScalarNode
        no_key, not_plain, str_tag, merge_tag = _NO_KEY, _NotPlain, _STR, _MERGE
        outer: list[tuple[Any, bool, Any]] = []  # the enclosing collections: (it, is a mapping, its key)
        top: Any = None  # the innermost open collection
        in_mapping = False
        key: Any = _NO_KEY
        root: Any = None
        # Values repeat (GET, API, STATUS_CODE, EQUALS, a tag, every key): one object per text while
        # the data lives (~0.3 KiB a check of a world), not one per occurrence; the maps go with the
        # load. `plain`: a plain scalar's value by its text (its tag depends on its text alone, and
        # every value a plain scalar resolves to, a str, int, float, bool, None or date, is immutable).
        texts: dict[str, Any] = {}
        plain: dict[str, Any] = {}
        missing = _NO_KEY
        # The node budget: every scalar and collection counts; a child deeper than MAX_DEPTH is
        # refused where its collection opens (a collection at the deepest level may not have any).
        left = max_nodes
        deepest = MAX_DEPTH - 1
        depth = 0  # open collections
        documents = 0
        while True:
            event = get()
            if event is None:
                break
            kind = type(event)
            if kind is scalar_event:
                if event.anchor is not None:
                    raise not_plain
                text_value = event.value
                if event.implicit[0]:  # plain, or `!`: libyaml and PyYAML give no other tag then
                    value = plain.get(text_value, missing)
                    if value is missing:
                        tag = resolve(scalar_node, text_value, (True, False))
                        if tag == str_tag:  # what construct_yaml_str returns, without a node for it
                            value = texts.setdefault(text_value, text_value)
                        elif tag == merge_tag or tag not in constructors:
                            raise not_plain  # the composed way says what it cannot construct
                        else:
                            value = constructors[tag](loader, scalar_node(tag, text_value, style=event.style))
                        plain[text_value] = value
                else:  # quoted or a block, untagged: a string, as the resolver says of every one
                    tag = event.tag
                    if tag is not None and tag != "!":
                        raise not_plain
                    value = texts.setdefault(text_value, text_value)
                left -= 1
                if in_mapping:
                    if key is no_key:
                        key = value
                    else:
                        top[key] = value
                        key = no_key
                elif top is not None:
                    top.append(value)
                else:
                    root = value
            elif kind is mapping_end or kind is sequence_end:
                top, in_mapping, key = outer.pop()
                depth -= 1
                if left < 0:
                    raise not_plain  # the composed way says so, as it always did
            elif kind is mapping_start or kind is sequence_start:
                tag = event.tag
                if event.anchor is not None or (tag is not None and tag != "!") or depth > deepest:
                    raise not_plain
                value = {} if kind is mapping_start else []
                left -= 1
                if left < 0:
                    raise not_plain
                if in_mapping:
                    if key is no_key:
                        raise not_plain  # a complex key
                    top[key] = value
                    key = no_key
                elif top is not None:
                    top.append(value)
                else:
                    root = value
                outer.append((top, in_mapping, key))
                top, in_mapping, key = value, kind is mapping_start, no_key
                depth += 1
            elif kind is alias_event:
                raise not_plain
            elif kind is document_start:
                documents += 1
                if documents > 1:
                    raise not_plain  # the composer says "expected a single document"
            # stream start and end, document end: nothing to build
        if left < 0:
            raise not_plain
        return root
    finally:
        loader.dispose()


def load_plain_or_bounded(text: str, max_nodes: int = MAX_NODES) -> Any:
    """safe_load_bounded's data and errors, without composing the node graph of a plain document."""
    try:
        return _from_events(text, max_nodes)
    except _NotPlain:
        return safe_load_bounded(text, max_nodes)


def lines_later(text: str, max_nodes: int = MAX_NODES) -> Callable[[], dict[Loc, int]]:
    """The lines of `text`'s fields (load_with_lines), worked out only when a message needs them."""

    def lines() -> dict[Loc, int]:
        try:
            return load_with_lines(text, max_nodes)[1]
        except (TooLarge, yaml.YAMLError, RecursionError):
            return {}

    return lines
