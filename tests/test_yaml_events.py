"""The world's YAML built from parser events gives what the composed SafeLoader gives, errors included."""

from __future__ import annotations

import pytest
import yaml

from runner.core.yamlguard import TooLarge, load_plain_or_bounded, safe_load_bounded

DOCUMENTS = [
    "a: 1\nb: [1, 2.5, true, null, 2020-01-01, 'x', 0o17, 0x1f, ~, yes, on, 1_000, .inf]\nc: {d: e}",
    "",
    "---\na: 1\n...\n",
    "- a\n- {b: c}\n- [[1], [2, [3]]]",
    "just a scalar",
    "a: 1\na: 2",  # the last wins, as SafeLoader
    "a: 2001-12-14t21:59:43.10-05:00\nb: '12'\nc: \"\\u00e9\"\nd: |\n  two\n  lines\n",
    # Quoted, block and `!` scalars are strings whatever they say; plain ones are resolved.
    "a: '123'\nb: \"true\"\nc: ! 12\nd: >\n  folded\n  text\ne: 'null'\nf: ''\ng:\n'h': ~\n",
    "- []\n- {}\n- [{}, [[]], {a: []}]\n- {'k': [1, '1', \"1\"]}\n",
    "\n".join(f"{'  ' * i}k{i}:" for i in range(39)) + " v",  # 39 mappings deep: within the budget
    # The composed way: anchors, aliases, merge keys, explicit tags, complex keys.
    "a: &x 1\nb: *x",
    "base: &b {k: 1}\nmine:\n  <<: *b\n  j: 2",
    "a: !!str 1\nb: !!binary aGVsbG8=",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_same_data_as_the_composed_loader(text: str) -> None:
    assert load_plain_or_bounded(text) == safe_load_bounded(text)


# `=` resolves to the value tag, which no constructor of the safe loader builds (the events way let a
# KeyError escape).
@pytest.mark.parametrize("text", ["--- 1\n--- 2", "a: [1, 2", "a: b: c", "? [1]\n: 2", "a: ="])
def test_same_errors(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as composed:
        safe_load_bounded(text)
    with pytest.raises(yaml.YAMLError) as events:
        load_plain_or_bounded(text)
    assert str(events.value) == str(composed.value)


def test_the_node_budget_holds() -> None:
    text = "\n".join(f"k{i}: {i}" for i in range(60))  # the mapping and 60 keys and values: 121 nodes
    assert load_plain_or_bounded(text, max_nodes=121) == safe_load_bounded(text, max_nodes=121)
    with pytest.raises(TooLarge):
        load_plain_or_bounded(text, max_nodes=120)
    with pytest.raises(TooLarge):
        load_plain_or_bounded("a:" + " [" * 50 + "]" * 50)


def test_a_text_written_many_times_is_one_value() -> None:
    data = load_plain_or_bounded("- {method: GET, tag: 'bench'}\n- {method: GET, tag: \"bench\"}\n")
    assert data == [{"method": "GET", "tag": "bench"}] * 2
    assert data[0]["method"] is data[1]["method"] and data[0]["tag"] is data[1]["tag"]


@pytest.mark.parametrize("levels", [39, 40, 41])
def test_the_depth_bound_is_the_composed_loaders(levels: int) -> None:
    # A collection at the deepest level goes the composed way (the events way refuses its children
    # where it opens): the answer is the composed loader's either way.
    for text in ("[" * levels + "]" * levels, "[" * levels + "1" + "]" * levels):
        try:
            expected = safe_load_bounded(text)
        except TooLarge:
            with pytest.raises(TooLarge):
                load_plain_or_bounded(text)
        else:
            assert load_plain_or_bounded(text) == expected
