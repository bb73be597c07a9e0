"""Position-aware readers for the file formats that pin container images.

Each reader turns a file's text into the same small tree (`Mapping`, `Sequence`,
`Scalar`) in which every scalar knows the character offsets of its value in the
original text. `forges.pins` finds image pins in that tree and splices new tags at
those offsets, so no reader ever has to write a file back out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Scalar styles. "plain" is an unquoted YAML scalar (its type depends on its text);
# "quoted" is a string in quotes in any format; "bare" is a JSON/HCL literal that is
# not a string (a number, true/false); "block" is a YAML literal/folded scalar.
PLAIN = "plain"
QUOTED = "quoted"
BARE = "bare"
BLOCK = "block"


class FormatError(ValueError):
    """The text cannot be read in the format its file name promises."""


@dataclass(eq=False)
class Scalar:
    value: str
    start: int  # offset of the value's first character (inside any quotes)
    end: int  # offset just after the value's last character
    style: str  # PLAIN, QUOTED, BARE or BLOCK
    verbatim: bool  # text[start:end] == value, so single characters can be spliced
    quote: str = ""  # the quote character around a QUOTED scalar


@dataclass(eq=False)
class Sequence:
    items: list[Node] = field(default_factory=list)


@dataclass(eq=False)
class Mapping:
    # Pairs as written, duplicates kept: a reader must not silently choose one.
    pairs: list[tuple[str, Node]] = field(default_factory=list)
    # Pairs that reach this mapping only through YAML merge keys (`<<: *anchor`), in
    # priority order; an own key always wins over an inherited one.
    inherited: list[tuple[str, Node]] = field(default_factory=list)

    def own(self, key: str) -> list[Node]:
        return [value for name, value in self.pairs if name == key]

    def get(self, key: str) -> Node | None:
        """The effective value of `key` (own last, else the first inherited)."""
        own = self.own(key)
        if own:
            return own[-1]
        for name, value in self.inherited:
            if name == key:
                return value
        return None


# None stands for a value that can hold no pin (null, an interpolation, a variable).
Node = Scalar | Sequence | Mapping | None
