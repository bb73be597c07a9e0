"""forges.treecache without a forge: least recently used first out, the byte bound held, nothing
kept past it or when it is 0, and a text without a blob SHA never kept."""

from __future__ import annotations

from forges.forge import TreeEntry
from forges.treecache import _ENTRY_BYTES, _TEXT_BYTES, TreeCache

REPO = ("github", "https://github.com", "github.com", "acme", "gitops")


class Reads:
    """A reader that counts its calls and answers `value`."""

    def __init__(self, value: object) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def test_a_commit_read_once_is_kept_and_a_text_by_its_blob():
    cache = TreeCache(max_bytes=10_000)
    tree = Reads([TreeEntry("a/kustomization.yaml", "b1")])
    text = Reads("images: []\n")
    for _ in range(3):
        assert cache.tree(REPO, "c1", tree) == (TreeEntry("a/kustomization.yaml", "b1"),)
        assert cache.text(REPO, "b1", text) == "images: []\n"
    assert (tree.calls, text.calls) == (1, 1)
    # Another commit is read; another repository holding the same SHA is another key.
    cache.tree(REPO, "c2", tree)
    cache.text(("gitlab", *REPO[1:]), "b1", text)
    assert (tree.calls, text.calls) == (2, 2)
    assert cache.size == 2 * (_ENTRY_BYTES + len("a/kustomization.yaml")) + 2 * (_TEXT_BYTES + len("images: []\n"))


def test_the_least_recently_used_goes_first_and_the_bound_holds():
    cache = TreeCache(max_bytes=3 * (_TEXT_BYTES + 100))
    readers = {blob: Reads(blob * 100) for blob in "abcd"}
    for blob in "abc":
        cache.text(REPO, blob, readers[blob])
    cache.text(REPO, "a", readers["a"])  # "a" used again: "b" is now the oldest
    cache.text(REPO, "d", readers["d"])
    assert cache.size <= cache.max_bytes
    for blob in "acd":
        cache.text(REPO, blob, readers[blob])
    assert [readers[b].calls for b in "acd"] == [1, 1, 1]
    cache.text(REPO, "b", readers["b"])
    assert readers["b"].calls == 2  # it was the one dropped


def test_nothing_is_kept_past_the_bound_at_zero_or_without_a_blob():
    too_big = TreeCache(max_bytes=_TEXT_BYTES + 10)
    reads = Reads("x" * 11)
    too_big.text(REPO, "b", reads)
    too_big.text(REPO, "b", reads)
    assert reads.calls == 2 and too_big.size == 0

    off = TreeCache(max_bytes=0)
    tree = Reads([])
    off.tree(REPO, "c", tree)
    off.tree(REPO, "c", tree)
    assert tree.calls == 2

    unnamed = TreeCache(max_bytes=10_000)
    reads = Reads("text")
    unnamed.text(REPO, "", reads)
    unnamed.text(REPO, "", reads)
    assert reads.calls == 2


def test_the_bound_is_the_settings_unless_given(settings):
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = 1234
    assert TreeCache().max_bytes == 1234
    assert TreeCache(max_bytes=5).max_bytes == 5


def test_turned_off_it_answers_nothing_it_kept_before(settings):
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = 10_000
    cache = TreeCache()
    reads = Reads("text")
    cache.text(REPO, "b", reads)
    settings.PORTAL_FORGE_TREE_CACHE_BYTES = 0
    cache.text(REPO, "b", reads)
    assert reads.calls == 2


def test_parses_kept_from_preview_to_preview_are_bounded_and_by_text(settings):
    from forges.pins.parsecache import KeptParses, kept_parses, parsed_list

    calls: list[str] = []

    def parse(text: str):
        return lambda: calls.append(text) or [text.upper()]

    for _ in range(2):
        with kept_parses():
            assert parsed_list("test", "a: 1\n", "", parse("a: 1\n")) == ["A: 1\n"]
    assert calls == ["a: 1\n"], "parsed once, across two blocks"
    with kept_parses():
        parsed_list("test", "a: 2\n", "", parse("a: 2\n"))
    assert calls == ["a: 1\n", "a: 2\n"], "another text is parsed afresh"

    settings.PORTAL_FORGE_TREE_CACHE_BYTES = 0
    with kept_parses():
        parsed_list("test", "a: 1\n", "", parse("a: 1\n"))
    assert calls[-1] == "a: 1\n" and len(calls) == 3, "off: nothing kept is used"

    small = KeptParses(max_chars=10)
    small[("p", "", "12345")] = 1
    small[("p", "", "67890")] = 2
    small[("p", "", "abc")] = 3  # over 10 characters: the oldest goes
    assert list(small) == [("p", "", "67890"), ("p", "", "abc")]
    small[("p", "", "x" * 11)] = 4  # larger than the bound: never kept
    assert len(small) == 2
