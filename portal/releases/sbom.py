"""Reading an SBOM document into the few facts the portal keeps of each package.

An SBOM arrives as SPDX 2.x JSON, CycloneDX JSON, an in-toto statement carrying either as its
predicate (BuildKit attestations), or a DSSE envelope around such a statement (cosign `.att`).
`parse_sbom` unwraps those layers and parses the document with its own well-kept library:
spdx-tools for SPDX (`JsonLikeDictParser`, which also validates the licence expressions with
`license-expression`) and cyclonedx-python-lib for CycloneDX (`Bom.from_json`); purls are read
with packageurl-python. A document a library refuses is *malformed*: the reason is the
library's own message, cut short, and nothing is guessed from the half that parsed.

What is kept of a package: purl, name, version, licence (an SPDX expression as the document
gives it; CycloneDX's several licences are joined with AND, which is what listing them means)
and the purl type (`deb`, `npm`, …, which says whether it is an operating-system package).
Whole documents are never kept: a 400-package image is a few kilobytes of rows, not megabytes.

Pure: bytes in, packages out; no network, no database.
"""

from __future__ import annotations

import base64
import json
import warnings
from dataclasses import dataclass
from typing import Any

from packageurl import PackageURL

MAX_SBOM_BYTES = 50 * 1024 * 1024  # a bigger document is "too large", never read into memory
_REASON_LIMIT = 300

SPDX_PREDICATES = ("https://spdx.dev/Document", "https://spdx.dev/Document/v2.3", "https://spdx.dev/Document/v2.2")
CYCLONEDX_PREDICATES = ("https://cyclonedx.org/bom", "https://cyclonedx.org/bom/v1.4", "https://cyclonedx.org/bom/v1.5")
DSSE_PAYLOAD_INTOTO = "application/vnd.in-toto+json"


class SbomError(ValueError):
    """The document cannot be read; the message is the recorded reason."""


@dataclass(frozen=True)
class Package:
    purl: str
    name: str
    version: str
    licence: str  # SPDX expression, "" when the document does not say
    type: str  # purl type: deb, rpm, apk, npm, golang, maven, …; "" without a purl

    def row(self) -> list[str]:
        return [self.purl, self.name, self.version, self.licence, self.type]

    @classmethod
    def from_row(cls, row: list[str]) -> Package:
        purl, name, version, licence, kind = (list(row) + [""] * 5)[:5]
        return cls(purl=purl, name=name, version=version, licence=licence, type=kind)


@dataclass(frozen=True)
class ParsedSbom:
    format: str  # "SPDX-2.3", "CycloneDX-1.2"
    packages: tuple[Package, ...]


def parse_sbom(data: bytes) -> ParsedSbom:
    """The packages of an SBOM document (or of the statement or envelope around one)."""
    if len(data) > MAX_SBOM_BYTES:
        mb = 1024 * 1024
        raise SbomError(f"SBOM too large ({len(data) // mb} MB; the limit is {MAX_SBOM_BYTES // mb} MB)")
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise SbomError(f"not JSON: {_cut(str(exc))}")
    return parse_document(document)


def parse_document(document: Any) -> ParsedSbom:
    if not isinstance(document, dict):
        raise SbomError("not a JSON object")
    document = unwrap(document)
    if document.get("bomFormat") == "CycloneDX":
        return _cyclonedx(document)
    if str(document.get("spdxVersion", "")).startswith("SPDX-2"):
        return _spdx(document)
    if "spdxVersion" in document:
        raise SbomError(f"unsupported SPDX version {_cut(str(document.get('spdxVersion')))}")
    raise SbomError("neither SPDX 2.x nor CycloneDX JSON")


def unwrap(document: dict) -> dict:
    """The SBOM inside a DSSE envelope and/or an in-toto statement; the document itself otherwise."""
    if "payload" in document and "payloadType" in document:
        if document.get("payloadType") != DSSE_PAYLOAD_INTOTO:
            raise SbomError(f"DSSE envelope of {_cut(str(document.get('payloadType')))}, not an in-toto statement")
        try:
            document = json.loads(base64.b64decode(str(document["payload"]), validate=True))
        except (ValueError, TypeError) as exc:
            raise SbomError(f"DSSE payload is not base64 JSON: {_cut(str(exc))}")
        if not isinstance(document, dict):
            raise SbomError("DSSE payload is not a JSON object")
    if "predicateType" in document and "_type" in document:
        predicate_type = str(document.get("predicateType", ""))
        if predicate_type not in SPDX_PREDICATES + CYCLONEDX_PREDICATES:
            raise SbomError(f"in-toto statement of {_cut(predicate_type)}, not an SBOM")
        predicate = document.get("predicate")
        if not isinstance(predicate, dict):
            raise SbomError("in-toto statement without a predicate object")
        return predicate
    return document


def predicate_is_sbom(predicate_type: str) -> bool:
    return predicate_type in SPDX_PREDICATES + CYCLONEDX_PREDICATES


def _spdx(document: dict) -> ParsedSbom:
    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser

    try:
        parsed = JsonLikeDictParser().parse(document)
    except SPDXParsingError as exc:
        raise SbomError(f"SPDX: {_cut('; '.join(exc.get_messages()))}")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SbomError(f"SPDX: {_cut(str(exc))}")
    packages = []
    for package in parsed.packages:
        purl = next((ref.locator for ref in package.external_references if ref.reference_type == "purl"), "")
        licence = _spdx_licence(package.license_concluded) or _spdx_licence(package.license_declared)
        packages.append(_package(purl, package.name or "", package.version or "", licence))
    return ParsedSbom(format=str(document.get("spdxVersion")), packages=tuple(packages))


def _spdx_licence(value: object) -> str:
    # spdx-tools gives a license-expression object, or SpdxNoAssertion / SpdxNone, or None.
    if value is None or type(value).__name__ in ("SpdxNoAssertion", "SpdxNone"):
        return ""
    return str(value)


def _cyclonedx(document: dict) -> ParsedSbom:
    from cyclonedx.model.bom import Bom

    try:
        with warnings.catch_warnings():
            # The library warns about fields deprecated by later spec versions; the document is as published.
            warnings.simplefilter("ignore")
            bom = Bom.from_json(document)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - py-serializable raises whatever the field's type raised
        raise SbomError(f"CycloneDX: {_cut(f'{type(exc).__name__}: {exc}')}")
    packages = []
    for component in _components(bom.components):
        purl = component.purl.to_string() if component.purl is not None else ""
        licence = " AND ".join(_cdx_licence(lic) for lic in component.licenses if _cdx_licence(lic))
        packages.append(_package(purl, component.name or "", component.version or "", licence))
    return ParsedSbom(format=f"CycloneDX-{document.get('specVersion', '?')}", packages=tuple(packages))


def _components(components: Any) -> list[Any]:
    """Components and their nested components, depth first."""
    found = []
    for component in components or ():
        found.append(component)
        found.extend(_components(component.components))
    return found


def _cdx_licence(licence: Any) -> str:
    # DisjunctiveLicense: an SPDX id, or a name; LicenseExpression: an SPDX expression.
    for attribute in ("id", "value", "name"):
        value = getattr(licence, attribute, None)
        if value:
            text = str(value)
            return f"({text})" if " OR " in text or " AND " in text else text
    return ""


def _package(purl: str, name: str, version: str, licence: str) -> Package:
    kind = ""
    if purl:
        try:
            parsed = PackageURL.from_string(purl)
            kind = parsed.type or ""
            version = version or parsed.version or ""
            purl = parsed.to_string()
        except ValueError:
            purl = ""  # a purl that is not one is no key to match vulnerabilities by
    return Package(purl=purl[:500], name=name[:200], version=version[:200], licence=licence[:300], type=kind[:20])


def _cut(text: str) -> str:
    return text.strip()[:_REASON_LIMIT]
