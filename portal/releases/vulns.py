"""What the supply chain says about an image version, and about moving between two.

`facts_for(service, version)` reads the store only (never a registry, OSV or CISA: those are
read on the registry queue by portal.releases.sbom_reading): the version's SBOM packages,
their known vulnerabilities (one finding per CVE, OSV ids folded by alias), which are
exploited in the wild (CISA KEV), and since when each was last checked.

`diff(old, new)` is pure: the vulnerabilities the move fixes, brings and leaves, exploited
first then by severity, and the licence changes of non-OS packages that need a look
(portal.releases.licences). `describe(diff, kind)` is its Markdown, the one wording of the pull
request description, the preview and Updates. Whatever is missing (no SBOM, a malformed or
too large one, OSV or KEV not reachable) is said, and never read as "no vulnerabilities":
where OSV never answered for a version's packages, what a move fixes is "unknown" and says why
(`unknown_because`), on every page, API answer and tool that counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from portal.kernel.catalog.models import Service
from portal.kernel.timestamps import utc_stamp
from portal.releases.licences import NOT_LEGAL_ADVICE, is_os_package, kind_of, same_licence
from portal.releases.models import FeedStatus, ImageSbom, KnownExploited, PackageCheck, Release, Vulnerability
from portal.releases.osv import SEVERITIES
from portal.releases.sbom import Package
from portal.releases.sbom_registry import DEFAULT_PLATFORM

ROLLBACK = "rollback"  # the kinds are the planner's; only rollback words differ here
MAX_LISTED = 15  # findings listed per group in a description; the rest are counted


@dataclass(frozen=True)
class Finding:
    key: str  # the CVE id when the record has one, else the OSV id
    osv_ids: tuple[str, ...]
    severity: str
    exploited: bool
    summary: str
    packages: tuple[str, ...]  # "name version"
    fixed_in: tuple[str, ...]  # "name fixed-version"

    @property
    def rank(self) -> tuple[int, int, str]:
        return (0 if self.exploited else 1, SEVERITIES.index(self.severity), self.key)


@dataclass(frozen=True)
class ImageFacts:
    version: str
    sbom: str  # ImageSbom status, or "unread"
    reason: str = ""  # why there are no packages to look at
    platform: str = ""
    platform_assumed: bool = False
    packages: tuple[Package, ...] = ()
    findings: tuple[Finding, ...] = ()
    unchecked: int = 0  # packages with a purl OSV has never answered for
    checked_at: datetime | None = None  # the oldest answer the findings rest on
    osv_error: str = ""
    osv_ok_at: datetime | None = None
    osv_error_at: datetime | None = None
    kev_ok_at: datetime | None = None
    kev_error: str = ""

    @property
    def has_sbom(self) -> bool:
        return self.sbom == ImageSbom.FOUND

    @property
    def checked(self) -> bool:
        """Every package was matched against OSV (an answer, fresh or kept)."""
        return self.has_sbom and self.unchecked == 0 and (self.checked_at is not None or not self.packages)

    @property
    def worst(self) -> tuple[int, int, str] | None:
        return min((f.rank for f in self.findings), default=None)


@dataclass(frozen=True)
class LicenceChange:
    package: str
    version: str
    licence: str
    kind: str
    before: str  # the licence it had; "" when the package is new


@dataclass(frozen=True)
class SupplyChainDiff:
    old: ImageFacts
    new: ImageFacts
    fixed: tuple[Finding, ...] = ()
    brought: tuple[Finding, ...] = ()
    unchanged: tuple[Finding, ...] = ()
    licences: tuple[LicenceChange, ...] = ()
    missing: tuple[str, ...] = ()  # why the comparison is incomplete, one sentence each

    @property
    def complete(self) -> bool:
        return not self.missing


# --- reading the store ------------------------------------------------------------------


def facts_for(service: Service, version: str, platform: str | None = None) -> ImageFacts:
    """The supply-chain facts of `service` at `version` as stored."""
    return facts_many([(service, version)], platform)[(service.pk, version)]


CHUNK = 5000  # values per IN list (SQLite's limit on bound variables is 32766)


def _chunked(model: Any, field_name: str, values: Iterable[str]) -> list[Any]:
    ordered = sorted(set(values))
    found: list[Any] = []
    for start in range(0, len(ordered), CHUNK):
        found += model.objects.filter(**{f"{field_name}__in": ordered[start : start + CHUNK]})
    return found


def facts_many(pairs: Iterable[tuple[Service, str]], platform: str | None = None) -> dict[tuple[int, str], ImageFacts]:
    """The facts of many (service, version) pairs in a fixed handful of queries (one per table,
    per CHUNK values), whatever their number: pages list many."""
    pairs = list(dict.fromkeys((s.pk, v) for s, v in pairs))
    feeds = {f.name: f for f in FeedStatus.objects.filter(name__in=("osv", "kev"))}
    osv, kev = feeds.get("osv"), feeds.get("kev")
    base: dict[str, Any] = {
        "osv_error": osv.last_error if osv else "",
        "osv_ok_at": osv.last_ok_at if osv else None,
        "osv_error_at": osv.last_error_at if osv else None,
        "kev_ok_at": kev.last_ok_at if kev else None,
        "kev_error": kev.last_error if kev else "",
    }
    digests = dict(
        ((sid, tag), digest)
        for sid, tag, digest in Release.objects.filter(
            service_id__in={sid for sid, _ in pairs}, tag__in={v for _, v in pairs}
        )
        .exclude(digest="")
        .values_list("service_id", "tag", "digest")
    )
    sboms: dict[str, dict[str, ImageSbom]] = {}
    for row in _chunked(ImageSbom, "digest", digests.values()):
        sboms.setdefault(row.digest, {})[row.platform] = row
    purls = {r[0] for rows_ in sboms.values() for row in rows_.values() for r in row.packages if r and r[0]}
    checks = {c.purl: c for c in _chunked(PackageCheck, "purl", purls)}
    records = {v.osv_id: v for v in _chunked(Vulnerability, "osv_id", {i for c in checks.values() for i in c.vuln_ids})}
    cves = {a for r in records.values() for a in [r.osv_id, *r.aliases] if a.startswith("CVE-")}
    exploited = {k.cve_id for k in _chunked(KnownExploited, "cve_id", cves)}
    found: dict[tuple[int, str], ImageFacts] = {}
    for sid, version in pairs:
        digest = digests.get((sid, version))
        if digest is None:
            found[(sid, version)] = ImageFacts(
                version, "unread", reason=f"the registry digest of {version} is not known yet", **base
            )
            continue
        rows = sboms.get(digest, {})
        row = rows.get(platform or DEFAULT_PLATFORM) or rows.get("") or next(iter(rows.values()), None)
        if row is None:
            found[(sid, version)] = ImageFacts(
                version, "unread", reason=f"the SBOM of {version} has not been read yet", **base
            )
        elif row.status != ImageSbom.FOUND:
            found[(sid, version)] = ImageFacts(
                version,
                row.status,
                reason=row.reason,
                platform=row.platform,
                platform_assumed=row.platform_assumed,
                **base,
            )
        else:
            packages = tuple(Package.from_row(r) for r in row.packages)
            findings, unchecked, checked_at = _findings(packages, checks, records, exploited)
            found[(sid, version)] = ImageFacts(
                version,
                row.status,
                platform=row.platform,
                platform_assumed=row.platform_assumed,
                packages=packages,
                findings=findings,
                unchecked=unchecked,
                checked_at=checked_at,
                **base,
            )
    return found


def _findings(
    packages: Sequence[Package],
    checks: dict[str, PackageCheck],
    records: dict[str, Vulnerability],
    exploited: set[str],
) -> tuple[tuple[Finding, ...], int, datetime | None]:
    purls = [p.purl for p in packages if p.purl]
    by_key: dict[str, dict] = {}
    for package in packages:
        check = checks.get(package.purl)
        for osv_id in check.vuln_ids if check else ():
            record = records.get(osv_id)
            aliases = [osv_id, *(record.aliases if record else [])]
            key = next((a for a in aliases if a.startswith("CVE-")), osv_id)
            entry = by_key.setdefault(
                key, {"ids": [], "severity": "unknown", "summary": "", "packages": [], "fixed": [], "exploited": False}
            )
            if osv_id not in entry["ids"]:
                entry["ids"].append(osv_id)
            if record is not None:
                if SEVERITIES.index(record.severity) < SEVERITIES.index(entry["severity"]):
                    entry["severity"] = record.severity
                entry["summary"] = entry["summary"] or record.summary
                for fixed in _fixed_for(record, package):
                    if fixed not in entry["fixed"]:
                        entry["fixed"].append(fixed)
            entry["exploited"] = entry["exploited"] or any(a in exploited for a in aliases)
            label = f"{package.name} {package.version}".strip()
            if label not in entry["packages"]:
                entry["packages"].append(label)
    findings = tuple(
        sorted(
            (
                Finding(
                    key=k,
                    osv_ids=tuple(e["ids"]),
                    severity=e["severity"],
                    exploited=e["exploited"],
                    summary=e["summary"],
                    packages=tuple(e["packages"]),
                    fixed_in=tuple(e["fixed"]),
                )
                for k, e in by_key.items()
            ),
            key=lambda f: f.rank,
        )
    )
    unchecked = sum(1 for p in set(purls) if p not in checks)
    checked_at = min((checks[p].checked_at for p in set(purls) if p in checks), default=None)
    return findings, unchecked, checked_at


def _fixed_for(record: Vulnerability, package: Package) -> list[str]:
    names = [package.name, package.name.rsplit("/", 1)[-1]]
    for name, versions in (record.fixed or {}).items():
        if name in names or name.endswith(":" + package.name) or name.endswith("/" + package.name):
            return [f"{package.name} {v}" for v in versions[:3]]
    return []


def supply_chain_diff(service: Service, from_version: str, to_version: str) -> SupplyChainDiff:
    """The stored facts of both versions, compared (what a pull request's description carries)."""
    found = facts_many([(service, from_version), (service, to_version)])
    return diff(found[(service.pk, from_version)], found[(service.pk, to_version)])


def diffs_many(moves: Iterable[tuple[Service, str, str]]) -> dict[tuple[int, str, str], SupplyChainDiff]:
    """Many (service, from, to) moves compared, their facts read together."""
    moves = list(moves)
    found = facts_many([(s, v) for s, a, b in moves for v in (a, b)])
    return {(s.pk, a, b): diff(found[(s.pk, a)], found[(s.pk, b)]) for s, a, b in moves}


# --- the diff (pure) ----------------------------------------------------------------------


def diff(old: ImageFacts, new: ImageFacts) -> SupplyChainDiff:
    """Moving from `old` to `new`: vulnerabilities fixed, brought and unchanged, licence changes."""
    missing = tuple(_missing(old) + _missing(new) + _feeds(new if new.has_sbom else old))
    before = {f.key: f for f in old.findings}
    after = {f.key: f for f in new.findings}
    compare = old.has_sbom and new.has_sbom
    fixed = tuple(before[k] for k in before if k not in after) if compare else ()
    brought = tuple(after[k] for k in after if k not in before) if compare else ()
    unchanged = tuple(after[k] for k in after if k in before) if compare else ()
    licences = licence_changes(old.packages, new.packages) if compare else ()
    return SupplyChainDiff(
        old=old,
        new=new,
        fixed=tuple(sorted(fixed, key=lambda f: f.rank)),
        brought=tuple(sorted(brought, key=lambda f: f.rank)),
        unchanged=tuple(sorted(unchanged, key=lambda f: f.rank)),
        licences=licences,
        missing=missing,
    )


def licence_changes(old: Iterable[Package], new: Iterable[Package]) -> tuple[LicenceChange, ...]:
    """Non-OS packages of `new` whose licence needs a look and that are new or had another licence."""
    before = {_identity(p): p for p in old}
    changes = []
    for package in new:
        if is_os_package(package.type):
            continue
        kind = kind_of(package.licence)
        if kind is None:
            continue
        was = before.get(_identity(package))
        if was is not None and same_licence(was.licence, package.licence):
            continue
        changes.append(
            LicenceChange(
                package=package.name,
                version=package.version,
                licence=package.licence,
                kind=kind,
                before=was.licence if was is not None else "",
            )
        )
    return tuple(sorted({c.package: c for c in changes}.values(), key=lambda c: (c.kind, c.package)))


def _identity(package: Package) -> str:
    # The purl without its version (and qualifiers): the same package in another version.
    if package.purl:
        return package.purl.split("@", 1)[0].split("?", 1)[0]
    return package.name


def _missing(facts: ImageFacts) -> list[str]:
    if facts.sbom == ImageSbom.FOUND:
        if facts.unchecked:
            return [f"{facts.unchecked} packages of {facts.version} have not been matched against OSV yet"]
        return []
    reason = facts.reason or "no SBOM"
    return [f"{facts.version}: {reason}"]


def _feeds(facts: ImageFacts) -> list[str]:
    notes = []
    if facts.osv_error:
        since = f"not checked since {utc_stamp(facts.osv_ok_at)}" if facts.osv_ok_at else "never checked"
        notes.append(f"OSV: {since} ({facts.osv_error})")
    if facts.kev_error or facts.kev_ok_at is None:
        since = f"not checked since {utc_stamp(facts.kev_ok_at)}" if facts.kev_ok_at else "never read"
        error = f" ({facts.kev_error})" if facts.kev_error else ""
        notes.append(f"exploited in the wild (CISA KEV): {since}{error}")
    return notes


# --- the one wording ------------------------------------------------------------------------


def unknown_because(facts: ImageFacts) -> str:
    """Why the known vulnerabilities of a version whose SBOM was read are not known ("" when
    they are, or when there is no SBOM, which says so itself): OSV never answered for some of
    its packages, because it could not be reached or has not been asked yet."""
    if not facts.has_sbom or facts.checked:
        return ""
    if facts.osv_error:
        tried = f"last tried {utc_stamp(facts.osv_error_at)}" if facts.osv_error_at else "tried"
        reached = f"last reached {utc_stamp(facts.osv_ok_at)}" if facts.osv_ok_at else "never reached"
        return f"OSV could not be reached ({tried}; {reached})"
    return f"OSV has not been asked about {facts.unchecked} packages of {facts.version} yet"


def move_unknown_because(result: SupplyChainDiff) -> str:
    """`unknown_because` of a move: the new version's reason, else the old one's."""
    return unknown_because(result.new) or unknown_because(result.old)



def describe(result: SupplyChainDiff, kind: str = "") -> list[str]:
    """Markdown lines: the supply-chain section of a pull request description."""
    verb = "rollback" if kind == ROLLBACK else "change"
    lines = [f"**Supply chain** ({result.old.version} → {result.new.version}, from the images' SBOMs):"]
    platform = result.new.platform or result.old.platform
    if platform and (result.new.platform_assumed or result.old.platform_assumed):
        lines.append(f"- Platform: {platform} (the cluster's platform is not known; {platform} was read).")
    unknown = move_unknown_because(result)
    brought = "brings back" if kind == ROLLBACK else "brings"
    if result.old.has_sbom and result.new.has_sbom and unknown:
        lines.append(f"- Known vulnerabilities this {verb} fixes: unknown — {unknown}.")
        lines.append(f"- Known vulnerabilities this {verb} {brought}: unknown — {unknown}.")
    elif result.old.has_sbom and result.new.has_sbom:
        lines += _group(f"Known vulnerabilities this {verb} fixes", result.fixed)
        lines += _group(f"Known vulnerabilities this {verb} {brought}", result.brought)
        if result.unchanged:
            keys = ", ".join(f.key for f in result.unchanged[:MAX_LISTED])
            more = f" and {len(result.unchanged) - MAX_LISTED} more" if len(result.unchanged) > MAX_LISTED else ""
            lines.append(f"- Still present in {result.new.version} ({len(result.unchanged)}): {keys}{more}.")
        if not (result.fixed or result.brought or result.unchanged) and not result.missing:
            lines.append("- No known vulnerabilities in either version.")
    if result.licences:  # only compared where both SBOMs were read
        lines.append(f"- Licences to look at before merging ({NOT_LEGAL_ADVICE}):")
        for change in result.licences:
            was = f"was {change.before}" if change.before else "new package"
            lines.append(
                f"  - `{_plain(change.package)}` {_plain(change.version)}: {_plain(change.licence)} "
                f"({change.kind}); {_plain(was)}"
            )
    for note in result.missing:
        lines.append(f"- Not complete: {note}.")
    return lines


def summary(result: SupplyChainDiff) -> str:
    """One line for a list (Updates): what the move fixes and brings, or why it is not known."""
    if not (result.old.has_sbom and result.new.has_sbom):
        return f"supply chain not checked: {result.missing[0]}" if result.missing else "supply chain not checked"
    unknown = move_unknown_because(result)
    if unknown:
        return f"known vulnerabilities fixed: unknown — {unknown}"
    exploited = sum(1 for f in result.fixed if f.exploited)
    parts = [
        f"fixes {len(result.fixed)} known vulnerabilit{'y' if len(result.fixed) == 1 else 'ies'}"
        + (f" ({exploited} exploited)" if exploited else "")
    ]
    if result.brought:
        back = sum(1 for f in result.brought if f.exploited)
        parts.append(f"brings {len(result.brought)}" + (f" ({back} exploited)" if back else ""))
    if result.licences:
        parts.append(f"{len(result.licences)} licence{'s' if len(result.licences) > 1 else ''} to look at")
    stale = [m for m in result.missing if m.startswith(("OSV", "exploited"))]
    return " · ".join(parts) + (f" ({stale[0]})" if stale else "")


def _group(title: str, findings: Sequence[Finding]) -> list[str]:
    if not findings:
        return [f"- {title}: none."]
    lines = [f"- {title} ({len(findings)}):"]
    for finding in findings[:MAX_LISTED]:
        lines.append(f"  - {finding_line(finding)}")
    if len(findings) > MAX_LISTED:
        lines.append(f"  - and {len(findings) - MAX_LISTED} more")
    return lines


def finding_line(finding: Finding) -> str:
    exploited = "**exploited in the wild** (CISA KEV), " if finding.exploited else ""
    ids = ", ".join(i for i in finding.osv_ids if i != finding.key)
    fixed = f"; fixed in {_plain(', '.join(finding.fixed_in))}" if finding.fixed_in else ""
    summary = f" — {_plain(finding.summary)}" if finding.summary else ""
    return (
        f"{finding.key}{f' ({ids})' if ids else ''}: {exploited}{finding.severity}, "
        f"in {_plain(', '.join(finding.packages))}{fixed}{summary}"
    )


def _plain(text: str) -> str:
    """Text from an SBOM or OSV inside a Markdown list item: one line, no markup that could act
    (links, HTML, code spans, emphasis, tables), mentions and issue references defused."""
    flat = " ".join(text.split())[:300]
    for char in "<>[]`*|":
        flat = flat.replace(char, " ")
    return flat.replace("@", "@\u200b").replace("#", "#\u200b").strip()
