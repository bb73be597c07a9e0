"""What the depth bound costs a poll: gitops.sources.decoding's bounded decoders against the plain
ones they guard, on the same bytes, in the same run.

A JSON list page or manifest file is first measured for depth without recursion
(`json_nests_deeper`, a few C-level passes over the bytes) and only cut when too deep,
and searched for escapes of text no database column stores (NUL, lone surrogates); a YAML
file is first walked as a flat event stream (`yaml_too_deep`). These checks run on every
poll, so their price is printed next to the decode they protect:

    .venv/bin/python bench/parse_depth.py [--apps 5000] [--repeat 5]

Inputs: every file of the real-object corpus (tests/data/real-objects, Argo CD, Flux and
workload objects as they were found) and one ApplicationList page of `--apps` Applications
the size real ones are (bench/collect.py's), as the API server sends it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from collect import application  # noqa: E402 - bench/ is on the path only now

from gitops.sources.decoding import (  # noqa: E402
    PlainLoader,
    json_nests_deeper,
    load_json,
    may_hold_unstorable,
    valid_json_nests_deeper,
)
from gitops.sources.manifests import ManifestSource  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "real-objects"


def best_of(repeat: int, work: Callable[[], Any]) -> float:
    """The fastest of `repeat` runs, in seconds (the least disturbed by the shared machine)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def plain_yaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=PlainLoader))  # noqa: S506 - a safe loader


def list_page(apps: int) -> bytes:
    items = [application(i, "bench-cluster") for i in range(apps)]
    return json.dumps({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationList",
                       "metadata": {"resourceVersion": "56907811"}, "items": items},
                      separators=(",", ":")).encode()


def row(what: str, size: int, plain: float, bounded: float) -> None:
    print(f"{what:<34} {size / 1024:>10.1f} KiB  plain {plain * 1000:>9.3f} ms  "
          f"bounded {bounded * 1000:>9.3f} ms  ratio {bounded / plain:>5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=5000, help="Applications in the large list page")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each decode; the fastest counts")
    args = parser.parse_args()

    json_files = sorted(CORPUS.rglob("*.json"))
    yaml_files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml"))
    json_bytes = [p.read_bytes() for p in json_files]
    yaml_texts = [p.read_text() for p in yaml_files]

    def corpus_json_plain() -> None:
        for data in json_bytes:
            json.loads(data)

    def corpus_json_bounded() -> None:
        for data in json_bytes:
            load_json(data)

    def corpus_yaml_plain() -> None:
        for text in yaml_texts:
            plain_yaml(text)

    def corpus_yaml_bounded() -> None:
        for path in yaml_files:
            ManifestSource._load(path)  # the depth walk, then the same decode

    def corpus_yaml_read_only() -> None:  # ManifestSource._load reads the file: so does the baseline
        for path in yaml_files:
            plain_yaml(path.read_text())

    page = list_page(args.apps)
    repeat = args.repeat
    print(f"real-object corpus: {len(json_files)} JSON and {len(yaml_files)} YAML files; "
          f"list page: {args.apps} Applications; fastest of {repeat} runs")
    row(f"corpus JSON ({len(json_files)} files)", sum(map(len, json_bytes)),
        best_of(repeat, corpus_json_plain), best_of(repeat, corpus_json_bounded))
    row(f"corpus YAML ({len(yaml_files)} files, from disk)", sum(len(t.encode()) for t in yaml_texts),
        best_of(repeat, corpus_yaml_read_only), best_of(repeat, corpus_yaml_bounded))
    row(f"ApplicationList, {args.apps} items", len(page),
        best_of(repeat, lambda: json.loads(page)), best_of(repeat, lambda: load_json(page)))
    check = best_of(repeat, lambda: json_nests_deeper(page))
    valid_check = best_of(repeat, lambda: valid_json_nests_deeper(page))
    scan = best_of(repeat, lambda: may_hold_unstorable(page))
    mib = len(page) / 2**20
    print(f"  the depth check after json.loads accepted the text (the usual path): {valid_check * 1000:.3f} ms"
          f" ({valid_check * 1000 / mib:.3f} ms per MiB)")
    print(f"  the bounded path's depth check (text not accepted yet): {check * 1000:.3f} ms "
          f"({check * 1000 / mib:.3f} ms per MiB); "
          f"the scan for NUL/surrogate escapes: {scan * 1000:.3f} ms ({scan * 1000 / mib:.3f} ms per MiB)")


if __name__ == "__main__":
    main()
