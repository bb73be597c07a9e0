"""The documents of a tree's files: positioned (to edit), plain (to read facts), their spans.

Every layout reader needs the same few reads — a file's YAML documents as positioned trees
(`forges.pins.formats.yamltree`), the same as plain data, where each document starts and ends
with its kind and name, the pin sites of a file, and a walk down to a key — so they are
defined once here. A file that does not parse reads as having no documents: a layout is
followed as far as its files can be read, and what was not read is reported by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping as MappingType

import yaml

from forges.pins.formats import FormatError, Mapping, Node, Scalar, Sequence, yamltree
from forges.pins.parsecache import parsed_list, parsed_plain
from forges.pins.sites import Site, pin_format, read_sites


def positioned_documents(files: MappingType[str, str], path: str) -> list[Node]:
    if not path.endswith((".yaml", ".yml")) or path not in files:
        return []
    try:
        return yamltree.read(files[path])
    except FormatError:
        return []


def plain_documents(text: str) -> list[object]:
    return parsed_plain("plain", text, lambda: _plain_documents(text))


def _plain_documents(text: str) -> list[object]:
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError:
        return []


def document_spans(text: str) -> list[tuple[int, int, str | None, str | None]]:
    """(start offset, end offset, kind, metadata.name) of each YAML document."""
    return parsed_list("spans", text, "", lambda: _document_spans(text))


def _document_spans(text: str) -> list[tuple[int, int, str | None, str | None]]:
    found: list[tuple[int, int, str | None, str | None]] = []
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return found
    for node in nodes:
        if not isinstance(node, yaml.MappingNode):
            continue
        kind = name = None
        for key, value in node.value:
            if key.value == "kind" and isinstance(value, yaml.ScalarNode):
                kind = value.value
            if key.value == "metadata" and isinstance(value, yaml.MappingNode):
                for meta_key, meta_value in value.value:
                    if meta_key.value == "name" and isinstance(meta_value, yaml.ScalarNode):
                        name = meta_value.value
        found.append((node.start_mark.index, node.end_mark.index, kind, name))
    return found


def file_sites(files: MappingType[str, str], path: str) -> list[Site]:
    """The pin sites of one file (none when it is missing, of no pin format, or unreadable)."""
    fmt = pin_format(path)
    if path not in files or fmt is None:
        return []
    try:
        return read_sites(files[path], fmt)
    except FormatError:
        return []


def descend(node: Node, *keys: str | int) -> Node:
    """The node at that key path (mapping keys, sequence indexes); None where it stops."""
    for key in keys:
        if isinstance(key, int):
            node = node.items[key] if isinstance(node, Sequence) and key < len(node.items) else None
        else:
            node = node.get(key) if isinstance(node, Mapping) else None
    return node


def scalar_value(node: Node) -> str:
    return node.value if isinstance(node, Scalar) else ""
