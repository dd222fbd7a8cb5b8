"""Zip containers (OOXML and OpenDocument) opened only after their sizes are checked.

An office file is a zip of XML parts. Before any library parses it, the archive's directory is
checked against the budget (budget.py), from the declared sizes alone: a zip bomb is refused without
inflating a byte. Python's zipfile stops inflating a member at its declared size (and fails its
CRC check when the data goes on), so a header that lies cannot make a later read larger than
what was checked; `read_member` bounds kbkit's own reads again. XML members are parsed without
DTDs, entities or network access (docs/adr/0033).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import IO, TYPE_CHECKING

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.budget import Budget

if TYPE_CHECKING:
    from lxml import etree

DTD_SCAN_BYTES = 64 * 1024
"""How much of each XML member's start is searched for a DOCTYPE (office XML never has one)."""

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_END_RECORD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_END_STRUCT = struct.Struct("<4s4H2LH")
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,  # a damaged deflate stream: zipfile passes zlib's own error on
    NotImplementedError,  # a compression method zipfile does not know
    RuntimeError,
    EOFError,
    OSError,
    ValueError,
)
"""What zipfile raises on a damaged or unusual archive."""


def open_archive(data: bytes, kind: str, budget: Budget, streamed: tuple[str, ...] = ()) -> zipfile.ZipFile:
    """The file as a zip whose declared sizes are within budget, or DocumentRefused saying why.
    `kind` names the format in messages ("Word document"); XML members under the `streamed`
    prefixes are read row by row, so they do not count against `budget.zip_parsed_bytes`."""
    if data.startswith(OLE_MAGIC):
        raise DocumentRefused(
            "encrypted",
            f"the {kind} is an OLE compound file, not a zip: it is password-protected (encrypted) "
            "or an old binary Office file renamed; save it unencrypted in the current format",
        )
    if not data.startswith(b"PK\x03\x04"):
        raise DocumentRefused("unparsable", f"the {kind} is not a zip archive (damaged or mis-named)")
    _check_end_record(data, kind, budget)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except ZIP_ERRORS as exc:
        raise DocumentRefused("unparsable", f"the {kind} is a damaged zip ({exc})") from None
    try:
        check_members(archive, kind, budget, streamed)
    except DocumentRefused:
        archive.close()
        raise
    return archive


def _check_end_record(data: bytes, kind: str, budget: Budget) -> None:
    """The member count and directory size from the zip's end record, before zipfile reads the
    directory; zip64 archives (needed only past 4 GiB or 65,535 members) are refused."""
    at = data.rfind(_END_RECORD, max(0, len(data) - 65_535 - _END_STRUCT.size))
    if at < 0 or at + _END_STRUCT.size > len(data):
        raise DocumentRefused("unparsable", f"the {kind} is a truncated or damaged zip (no end record)")
    fields = _END_STRUCT.unpack_from(data, at)
    entries, directory_size = fields[4], fields[5]
    if at >= 20 and data[at - 20 : at - 16] == _ZIP64_LOCATOR:
        raise DocumentRefused("unparsable", f"the {kind} is a zip64 archive; kbkit reads plain zips only")
    if entries > budget.zip_members or directory_size > budget.zip_members * 1024:
        raise _too_many(kind, entries, budget)


def _too_many(kind: str, members: int, budget: Budget) -> DocumentRefused:
    return DocumentRefused(
        "over-budget",
        f"the {kind}'s zip lists {members:,} members, over the {budget.zip_members:,}-member budget",
    )


def is_xml(name: str) -> bool:
    return name.endswith((".xml", ".rels"))


def check_members(
    archive: zipfile.ZipFile, kind: str, budget: Budget, streamed: tuple[str, ...] = ()
) -> None:
    """Every member's declared size and compression ratio, and their totals, against the budget."""
    members = archive.infolist()
    if len(members) > budget.zip_members:
        raise _too_many(kind, len(members), budget)
    total = parsed = 0
    for info in members:
        if info.flag_bits & 0x1:
            raise DocumentRefused(
                "encrypted", f"the {kind} has encrypted parts ({info.filename}); save it unencrypted"
            )
        if info.file_size > budget.zip_member_bytes:
            raise DocumentRefused(
                "over-budget",
                f"the {kind}'s part {info.filename} unpacks to {info.file_size:,} bytes, over the "
                f"{budget.zip_member_bytes >> 20} MiB budget per part",
            )
        ratio = info.file_size // max(info.compress_size, 1)
        if info.file_size > budget.zip_ratio_floor_bytes and ratio > budget.zip_ratio:
            raise DocumentRefused(
                "over-budget",
                f"the {kind}'s part {info.filename} unpacks {ratio:,}-fold, "
                f"over the {budget.zip_ratio}-fold budget (a zip bomb)",
            )
        total += info.file_size
        if total > budget.zip_total_bytes:
            mib = budget.zip_total_bytes >> 20
            raise DocumentRefused("over-budget", f"the {kind} unpacks to over {mib} MiB, over its budget")
        if is_xml(info.filename) and not (streamed and info.filename.startswith(streamed)):
            parsed += info.file_size
            if parsed > budget.zip_parsed_bytes:
                mib = budget.zip_parsed_bytes >> 20
                raise DocumentRefused(
                    "over-budget", f"the {kind}'s XML parts unpack to over {mib} MiB, over its budget"
                )


def read_member(archive: zipfile.ZipFile, name: str, kind: str, cap: int) -> bytes | None:
    """A member's bytes, read in chunks and refused past `cap` (the budget's bytes per member, or
    less) whatever its header says; None when the archive has no such member."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(1024 * 1024):
                size += len(chunk)
                if size > cap:
                    raise DocumentRefused(
                        "over-budget",
                        f"the {kind}'s part {name} unpacks to over {cap:,} bytes, over its budget",
                    )
                chunks.append(chunk)
    except ZIP_ERRORS as exc:
        raise _damaged(kind, name, exc) from None
    return b"".join(chunks)


def text_parts_only(archive: zipfile.ZipFile, kind: str, budget: Budget) -> bytes:
    """A copy of the archive with its XML parts as they are and every other part (images, media,
    embedded files) empty and never inflated: python-docx and python-pptx load every part into
    memory on opening, and kbkit reads none of those. Stored, not compressed: it is read at once."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
        for info in archive.infolist():
            if info.is_dir():
                continue
            with copy.open(info.filename, "w") as target:
                if is_xml(info.filename):
                    _copy_member(archive, info, target, kind, budget.zip_member_bytes)
    return out.getvalue()


def _copy_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: IO[bytes], kind: str, cap: int
) -> None:
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(1024 * 1024):
                size += len(chunk)
                if size > cap:
                    raise DocumentRefused(
                        "over-budget", f"the {kind}'s part {info.filename} unpacks to over its budget"
                    )
                target.write(chunk)
    except ZIP_ERRORS as exc:
        raise _damaged(kind, info.filename, exc) from None


def refuse_dtds(archive: zipfile.ZipFile, kind: str) -> None:
    """Refuse an XML member that declares a DTD (the start of a billion-laughs or external-entity
    attack); OOXML and OpenDocument parts never carry one. The libraries' parsers resolve no
    entities either: this says why a file is skipped instead of leaving its entities as text."""
    for info in archive.infolist():
        if not info.filename.endswith((".xml", ".rels")) or info.is_dir():
            continue
        try:
            with archive.open(info) as member:
                head = member.read(DTD_SCAN_BYTES)
        except ZIP_ERRORS as exc:
            raise _damaged(kind, info.filename, exc) from None
        if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
            raise DocumentRefused(
                "unparsable",
                f"the {kind}'s part {info.filename} declares a DTD or entities, which office files never do",
            )


def parse_xml(data: bytes, name: str, kind: str) -> etree._Element:
    """One XML member as a tree: no DTD loaded, no entity resolved, no network, no huge-tree mode."""
    from lxml import etree

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise DocumentRefused(
            "unparsable", f"the {kind}'s part {name} is not well-formed XML ({' '.join(str(exc).split())})"
        ) from None


def _damaged(kind: str, name: str, exc: Exception) -> DocumentRefused:
    return DocumentRefused("unparsable", f"the {kind}'s part {name} is damaged ({exc})")
