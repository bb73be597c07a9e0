"""HCL (Nomad jobs, Terraform) as a positioned tree, from python-hcl2's lark parse tree.

`hcl2.dumps`/`reconstruct` lose comments and layout, but `parses_to_tree` keeps every
token's `start_pos`/`end_pos`, which is all a splice needs. Blocks and objects become
mappings (block labels are not keys), tuples and function arguments become sequences,
and a string with an interpolation (`"app:${var.tag}"`) is not a pin at all.
"""

from __future__ import annotations

import hcl2
from lark import Token, Tree
from lark.exceptions import LarkError

from forges.pins.formats import BARE, QUOTED, FormatError, Mapping, Node, Scalar, Sequence


def read(text: str) -> list[Node]:
    """The file's top-level body as a one-element list; FormatError when it is not HCL."""
    # The lexer rejects a BOM; parse without it and shift every offset back by one.
    shift = 1 if text.startswith("\ufeff") else 0
    try:
        tree = hcl2.parses_to_tree(text[shift:])
    except (LarkError, RecursionError, ValueError) as error:
        summary = " ".join(str(error).split("\n")[:2]).strip()
        raise FormatError(f"not valid HCL: {summary}") from None
    return [_Converter(text, shift).node(tree)]


class _Converter:
    def __init__(self, text: str, shift: int) -> None:
        self.text = text
        self.shift = shift

    def node(self, tree: Tree | Token) -> Node:
        if isinstance(tree, Token):
            return None
        kind = tree.data
        if kind in ("start",):
            return self.node(tree.children[0]) if tree.children else Mapping()
        if kind == "body":
            return self.body(tree)
        if kind == "expr_term":
            return self.expr(tree)
        return self.container(tree)

    def body(self, tree: Tree) -> Mapping:
        mapping = Mapping()
        for child in tree.children:
            if not isinstance(child, Tree):
                continue
            if child.data == "attribute":
                name = _identifier(child.children[0])
                value = next((c for c in child.children[1:] if isinstance(c, Tree)), None)
                if name is not None and value is not None:
                    mapping.pairs.append((name, self.node(value)))
            elif child.data == "block":
                name = _identifier(child.children[0])
                body = next((c for c in child.children if isinstance(c, Tree) and c.data == "body"), None)
                if name is not None and body is not None:
                    mapping.pairs.append((name, self.body(body)))
        return mapping

    def expr(self, tree: Tree) -> Node:
        if len(tree.children) != 1:
            return self.container(tree)
        inner = tree.children[0]
        if isinstance(inner, Token):
            return None
        if inner.data == "string":
            return self.string(inner)
        if inner.data in ("int_lit", "float_lit"):
            tokens = [t for t in inner.scan_values(lambda v: isinstance(v, Token))]
            span = self.span(tokens[0]) if len(tokens) == 1 else None
            if span is None:
                return None
            start, end = span
            return Scalar(self.text[start:end], start, end, BARE, verbatim=True)
        if inner.data == "object":
            return self.object(inner)
        if inner.data == "tuple":
            return Sequence([self.node(c) for c in inner.children if isinstance(c, Tree)])
        if inner.data == "identifier":
            return None  # a variable or keyword, never a literal pin
        return self.container(inner)

    def string(self, tree: Tree) -> Scalar | None:
        parts = [c for c in tree.children if isinstance(c, Tree) and c.data == "string_part"]
        quotes = [c for c in tree.children if isinstance(c, Token) and c.type == "DBLQUOTE"]
        if len(quotes) != 2:
            return None
        if not parts:
            span = self.span(quotes[0])
            if span is None:
                return None
            start = span[1]
            return Scalar("", start, start, QUOTED, verbatim=True, quote='"')
        if len(parts) != 1 or len(parts[0].children) != 1 or not isinstance(parts[0].children[0], Token):
            return None  # an interpolation or a template directive
        token = parts[0].children[0]
        span = self.span(token)
        if span is None:
            return None
        start, end = span
        value = str(token)
        # Escapes (`\"`, `\n`) are kept raw by the lexer; such a value is not spliceable.
        return Scalar(value, start, end, QUOTED, verbatim="\\" not in value, quote='"')

    def span(self, token: Token) -> tuple[int, int] | None:
        if token.start_pos is None or token.end_pos is None:
            return None
        return token.start_pos + self.shift, token.end_pos + self.shift

    def object(self, tree: Tree) -> Mapping:
        mapping = Mapping()
        for element in tree.children:
            if not (isinstance(element, Tree) and element.data == "object_elem"):
                continue
            trees = [c for c in element.children if isinstance(c, Tree)]
            if len(trees) != 2:
                continue
            key = self.key(trees[0])
            if key is not None:
                mapping.pairs.append((key, self.node(trees[1])))
        return mapping

    def key(self, tree: Tree) -> str | None:
        for sub in tree.iter_subtrees_topdown():
            if sub.data == "identifier":
                return _identifier(sub)
            if sub.data == "string":
                scalar = self.string(sub)
                return scalar.value if scalar else None
        return None

    def container(self, tree: Tree) -> Sequence:
        # Function calls, conditionals, `for` expressions: their literal parts may still
        # hold image maps (`jsonencode([{ image = "..." }])`), so keep them walkable.
        return Sequence([self.node(c) for c in tree.children if isinstance(c, Tree)])


def _identifier(tree: Tree | Token) -> str | None:
    if isinstance(tree, Tree) and tree.data == "identifier" and tree.children:
        return str(tree.children[0])
    return None
