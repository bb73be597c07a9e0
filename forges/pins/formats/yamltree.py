"""YAML (and therefore Kubernetes, Kustomize, Helm values, Compose) as a positioned tree.

PyYAML's composer gives every scalar node start and end marks as character offsets
into the str it was given, counting a BOM and keeping CRLF, which is what splicing
needs; ruamel.yaml's round-trip API gives only a start (line, column) per key.
Aliases come back as the very node object of their anchor, so an edit through an
alias lands on the anchor's characters; merge keys are resolved here.
"""

from __future__ import annotations

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from forges.pins.formats import BLOCK, PLAIN, QUOTED, FormatError, Mapping, Node, Scalar, Sequence
from forges.pins.parsecache import parsed_list

_MERGE_TAG = "tag:yaml.org,2002:merge"
_NULLS = {"", "~", "null", "Null", "NULL"}


def read(text: str) -> list[Node]:
    """One tree per YAML document; FormatError when the text is not YAML. Parsed once per
    text within `forges.pins.parsecache.shared_parses`."""
    return parsed_list("yamltree", text, "", lambda: _read(text))


def _read(text: str) -> list[Node]:
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError) as error:
        raise FormatError(f"not valid YAML: {_first_line(error)}") from None
    memo: dict[int, Node] = {}
    return [_convert(document, text, memo) for document in documents if document is not None]


def _first_line(error: Exception) -> str:
    return " ".join(str(error).split("\n")[:3]).strip()


def _convert(node: yaml.Node, text: str, memo: dict[int, Node]) -> Node:
    # The memo keeps aliases as one object, and stops a recursive alias from looping.
    key = id(node)
    if key in memo:
        return memo[key]
    if isinstance(node, ScalarNode):
        result: Node = _scalar(node, text)
        memo[key] = result
        return result
    if isinstance(node, SequenceNode):
        sequence = Sequence()
        memo[key] = sequence
        sequence.items = [_convert(item, text, memo) for item in node.value]
        return sequence
    if isinstance(node, MappingNode):
        mapping = Mapping()
        memo[key] = mapping
        merges: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG or (
                isinstance(key_node, ScalarNode) and key_node.value == "<<" and key_node.style is None
            ):
                merges.append(value_node)
                continue
            if not isinstance(key_node, ScalarNode):
                continue  # complex keys never name an image field
            mapping.pairs.append((key_node.value, _convert(value_node, text, memo)))
        mapping.inherited = _merged_pairs(merges, text, memo)
        return mapping
    return None


def _merged_pairs(merges: list[yaml.Node], text: str, memo: dict[int, Node]) -> list[tuple[str, Node]]:
    # `<<: *a` or `<<: [*a, *b]`: earlier mappings win over later ones, as YAML says.
    sources: list[yaml.Node] = []
    for merge in merges:
        if isinstance(merge, SequenceNode):
            sources.extend(merge.value)
        else:
            sources.append(merge)
    pairs: list[tuple[str, Node]] = []
    for source in sources:
        converted = _convert(source, text, memo)
        if isinstance(converted, Mapping):
            seen = {name for name, _ in pairs}
            for name, value in converted.pairs + converted.inherited:
                if name not in seen:
                    pairs.append((name, value))
                    seen.add(name)
    return pairs


def _scalar(node: ScalarNode, text: str) -> Scalar | None:
    value = node.value
    end = node.end_mark.index
    style = node.style
    if style is None:
        if value in _NULLS and node.tag != "tag:yaml.org,2002:str":
            return None
        # Start from the end: the start mark of a node with an anchor or a tag points
        # at `&anchor`/`!!str`, not at the value.
        start = end - len(value)
        return Scalar(value, start, end, PLAIN, verbatim=start >= 0 and text[start:end] == value)
    if style in ("'", '"'):
        inner_end = end - 1
        start = inner_end - len(value)
        verbatim = (
            start >= 1 and text[start - 1] == style and text[inner_end] == style and text[start:inner_end] == value
        )
        return Scalar(value, start, inner_end, QUOTED, verbatim=verbatim, quote=style)
    return Scalar(value, node.start_mark.index, end, BLOCK, verbatim=False)
