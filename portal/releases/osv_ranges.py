"""Whether an OSV record's `affected` entry covers a package version, as the OSV API decides it.

Pure. Used by portal.releases.osv_offline, which answers from OSV's exported records instead of
api.osv.dev, so the two must match on the same package and version:

- a package URL names the package: its type gives OSV's ecosystem (`PURL_ECOSYSTEMS`), and the
  name is written as that ecosystem writes it (Maven `group:artifact`, Go and Packagist
  `namespace/name`, npm `@scope/name`, PyPI normalised as PEP 503 says); Go versions lose
  their leading "v", as OSV's Go records are written;
- an entry covers a version listed in its `versions`, or one inside any of its `SEMVER` or
  `ECOSYSTEM` ranges, evaluated as the OSV schema's "evaluation" section says: the events
  sorted by version ("0" before everything), walked in order, `introduced` at or below the
  version turns it affected, `fixed` at or below (or `last_affected` below, or `limit` at or
  below) turns it back. `GIT` ranges name commits, not versions: an image's SBOM has none.

Versions are compared by univers' classes for each ecosystem (semver for SEMVER ranges). A
version or event its class cannot read matches nothing in that range: the API does the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packageurl import PackageURL
from univers import versions as uv

PURL_ECOSYSTEMS = {
    "npm": "npm", "pypi": "PyPI", "maven": "Maven", "golang": "Go", "cargo": "crates.io", "gem": "RubyGems",
    "nuget": "NuGet", "composer": "Packagist", "hex": "Hex", "pub": "Pub", "deb": "Debian", "apk": "Alpine",
}
ECOSYSTEM_VERSIONS: dict[str, type[uv.Version]] = {
    "npm": uv.SemverVersion, "PyPI": uv.PypiVersion, "Maven": uv.MavenVersion, "Go": uv.GolangVersion,
    "crates.io": uv.SemverVersion, "RubyGems": uv.RubygemsVersion, "NuGet": uv.NugetVersion,
    "Packagist": uv.ComposerVersion, "Hex": uv.SemverVersion, "Pub": uv.SemverVersion,
    "Debian": uv.DebianVersion, "Alpine": uv.AlpineLinuxVersion,
}
_PEP503 = re.compile(r"[-_.]+")


@dataclass(frozen=True)
class PackageVersion:
    ecosystem: str  # OSV's name, without a release ("Debian", not "Debian:12")
    name: str
    version: str
    release: str = ""  # a distribution's release from the purl ("12" of distro=debian-12), if any


def normal_name(ecosystem: str, name: str) -> str:
    """A package name as OSV compares it: PyPI's normalised (PEP 503), every other as written."""
    return _PEP503.sub("-", name).lower() if ecosystem == "PyPI" else name


def package_of(purl: str) -> PackageVersion | None:
    """The OSV package and version a versioned package URL names; None for one OSV has no
    ecosystem for, or one that is not a package URL."""
    try:
        parsed = PackageURL.from_string(purl)
    except ValueError:
        return None
    ecosystem = PURL_ECOSYSTEMS.get(parsed.type)
    if ecosystem is None or not parsed.version:
        return None
    name = parsed.name
    if ecosystem == "Maven" and parsed.namespace:
        name = f"{parsed.namespace}:{parsed.name}"
    elif ecosystem in ("Go", "Packagist", "npm") and parsed.namespace:
        name = f"{parsed.namespace}/{parsed.name}"
    name = normal_name(ecosystem, name)
    version = parsed.version.removeprefix("v") if ecosystem == "Go" else parsed.version
    distro = str((parsed.qualifiers or {}).get("distro", "")) if isinstance(parsed.qualifiers, dict) else ""
    release = distro.rsplit("-", 1)[-1] if "-" in distro else distro.removeprefix("v")
    return PackageVersion(ecosystem, name, version, release)


def names_package(entry: Mapping[str, Any], package: PackageVersion) -> bool:
    """The entry is about this package: same ecosystem and name (and, where both name one, the
    same distribution release: Debian:12's record says nothing of Debian 11)."""
    named = entry.get("package")
    if not isinstance(named, Mapping):
        return False
    ecosystem, _, release = str(named.get("ecosystem", "")).partition(":")
    name = normal_name(ecosystem, str(named.get("name", "")))
    if ecosystem != package.ecosystem or name != package.name:
        return False
    release = release.split(":", 1)[0].removeprefix("v")
    return not (release and package.release and release != package.release)


def affects(entry: Mapping[str, Any], package: PackageVersion) -> bool:
    """Whether this `affected` entry (already `names_package`) covers the package's version."""
    if package.version in [str(v) for v in entry.get("versions") or []]:
        return True
    for version_range in entry.get("ranges") or []:
        if not isinstance(version_range, Mapping):
            continue
        kind = version_range.get("type")
        cls = uv.SemverVersion if kind == "SEMVER" else ECOSYSTEM_VERSIONS.get(package.ecosystem)
        if kind not in ("SEMVER", "ECOSYSTEM") or cls is None:
            continue
        if in_range(package.version, version_range.get("events") or [], cls):
            return True
    return False


def _read(cls: type[uv.Version], text: str) -> uv.Version | None:
    try:
        return cls(text.removeprefix("v") if cls is uv.SemverVersion else text)
    except Exception:  # noqa: BLE001 - univers raises several kinds for text it cannot read
        return None


def in_range(version: str, events: Iterable[Any], cls: type[uv.Version]) -> bool:
    """The OSV schema's evaluation of one range's events for one version."""
    at = _read(cls, version)
    if at is None:
        return False
    steps: list[tuple[uv.Version | None, str]] = []
    for event in events:
        if not isinstance(event, Mapping) or len(event) != 1:
            continue
        ((kind, value),) = event.items()
        if kind == "introduced" and str(value) == "0":
            steps.append((None, kind))
            continue
        bound = _read(cls, str(value))
        if bound is None or kind not in ("introduced", "fixed", "last_affected", "limit"):
            return False  # a range it cannot read whole decides nothing
        steps.append((bound, kind))
    steps.sort(key=lambda step: (step[0] is not None, step[0] if step[0] is not None else 0))  # type: ignore[arg-type]
    affected = False
    for bound, kind in steps:
        if kind == "introduced" and (bound is None or at >= bound):
            affected = True
        elif kind in ("fixed", "limit") and bound is not None and at >= bound:
            affected = False
        elif kind == "last_affected" and bound is not None and at > bound:
            affected = False
    return affected
