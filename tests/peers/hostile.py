"""Hostile inputs, built on demand (never checked in): for the tests and for bench/hostile.py.

- `form_bomb_pdf`: a few KB of PDF whose page draws one form XObject hundreds of thousands of
  times (the content stream compresses about 1000:1);
- `repeated_form_pdf`: under 2 KB of PDF whose pages (one page object, listed again and again)
  each draw one form as often as pypdf renders forms per page, so every draw costs a rendering;
- `many_operators_pdf`: one page drawing a form of cheap path operators a few times;
- `text_pdf`: an ordinary PDF, one line of text per page, for the page and text budgets;
- `backtracking_kbignore` and `backtracking_names`: a `.kbignore` pattern and file names on which
  a backtracking regex engine takes exponential time.
"""

from __future__ import annotations

import zlib

FORM_TEXT = "repeated form text"


def form_bomb_pdf(draws: int) -> bytes:
    """One page whose content stream is `/X Do` repeated `draws` times."""
    content = zlib.compress(b"/X Do\n" * draws, 9)
    return _pdf(
        [_FONT, _text_form(), _stream(content, b"/Filter /FlateDecode")],
        pages=[b"/Resources << /XObject << /X %d 0 R >> >> /Contents %d 0 R" % (_FIRST + 1, _FIRST + 2)],
    )


def repeated_form_pdf(pages: int = 120, draws_per_page: int = 5_000) -> bytes:
    """`pages` pages (one page object, listed `pages` times) each drawing one text form
    `draws_per_page` times: 600,000 renderings by default."""
    content = zlib.compress(b"/X Do\n" * draws_per_page, 9)
    return _pdf(
        [_FONT, _text_form(), _stream(content, b"/Filter /FlateDecode")],
        pages=[b"/Resources << /XObject << /X %d 0 R >> >> /Contents %d 0 R" % (_FIRST + 1, _FIRST + 2)],
        copies=pages,
    )


def many_operators_pdf(operators: int, draws: int) -> bytes:
    """One page drawing `draws` times a form of `operators` path operators (`0 0 m`); the form has
    a font, since pypdf reads no form without resources."""
    form = zlib.compress(b"0 0 m\n" * operators, 9)
    return _pdf(
        [
            _FONT,
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 200 50] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Filter /FlateDecode /Length %d >>\nstream\n" % (_FIRST, len(form)) + form + b"\nendstream",
            _stream(b"/X Do\n" * draws),
        ],
        pages=[b"/Resources << /XObject << /X %d 0 R >> >> /Contents %d 0 R" % (_FIRST + 1, _FIRST + 2)],
    )


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _text_form() -> bytes:
    """A form showing FORM_TEXT in the font object `_FIRST`."""
    form = f"BT /F1 12 Tf 10 10 Td ({FORM_TEXT}) Tj ET".encode()
    return (
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 200 50] /Resources << /Font << /F1 %d 0 R >> >> "
        b"/Length %d >>\nstream\n" % (_FIRST, len(form)) + form + b"\nendstream"
    )


def _stream(data: bytes, keys: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n" % (len(data), keys + b" " if keys else b"") + data + b"\nendstream"


def text_pdf(lines: list[str]) -> bytes:
    """One page per line of text (ASCII), each page its own content stream."""
    objects = [_FONT]
    pages = []
    for number, line in enumerate(lines):
        text = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("ascii")
        stream = b"BT /F1 12 Tf 20 700 Td (" + text + b") Tj ET"
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        pages.append(
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R" % (_FIRST, _FIRST + 1 + number)
        )
    return _pdf(objects, pages)


_FIRST = 3
"""Object numbers 1 and 2 are the catalog and the page tree; the caller's objects follow."""


def _pdf(objects: list[bytes], pages: list[bytes], copies: int = 1) -> bytes:
    """A PDF of `objects` (numbered from `_FIRST`) and `pages`, each listed `copies` times."""
    first_page = _FIRST + len(objects)
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(len(pages)) for _ in range(copies))
    body = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % (len(pages) * copies),
        *objects,
        *(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] " + page + b" >>" for page in pages),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(body, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(body) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(body) + 1, xref)
    return bytes(out)


def backtracking_kbignore(stars: int = 15) -> str:
    """`**/a*a*...a*b.md`: never matches the names below, after exponentially many tries."""
    return "**/" + "a*" * stars + "b.md\n"


def backtracking_names(count: int, run: int = 40) -> list[str]:
    """Names that start with a long run of `a` and hold no `b`: the worst case for the pattern."""
    return [f"{'a' * run}{number}.md" for number in range(count)]
