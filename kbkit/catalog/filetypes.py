"""The file types kbkit reads, by extension: the names `[parsers] enabled` takes.

Each maps to the media type of the text kbkit serves for it (a PDF is served as its extracted
plain text, an office file, an HTML page or a notebook as the Markdown it is converted to), to
the reader in kbkit/kb/formats/ that turns it into text, and to the libraries that reader needs.
"""

from __future__ import annotations

FILE_TYPES: dict[str, str] = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "txt": "text/plain",
    "rst": "text/x-rst",
    "pdf": "text/plain",
    "docx": "text/markdown",
    "pptx": "text/markdown",
    "xlsx": "text/markdown",
    "odt": "text/markdown",
    "odp": "text/markdown",
    "ods": "text/markdown",
    "html": "text/markdown",
    "htm": "text/markdown",
    "ipynb": "text/markdown",
}
"""Every file type kbkit ships a parser for: extension (no dot, lower case) -> served media type."""

READERS: dict[str, str] = {
    "md": "markdown.parse_markdown",
    "markdown": "markdown.parse_markdown",
    "txt": "plain.parse_plain",
    "rst": "rst.parse_rst",
    "pdf": "pdf.parse_pdf",
    "docx": "ooxml.parse_docx",
    "pptx": "ooxml.parse_pptx",
    "xlsx": "ooxml.parse_xlsx",
    "odt": "odf.parse_odt",
    "odp": "odf.parse_odp",
    "ods": "odf.parse_ods",
    "html": "html.parse_html",
    "htm": "html.parse_html",
    "ipynb": "notebook.parse_notebook",
}
"""File type -> its reader, "module.function" in kbkit/kb/formats/: the registry imports a
reader's module only when a file of that type is met (python-docx, openpyxl and lxml are slow to
import)."""

LIBRARIES: dict[str, tuple[tuple[str, str], ...]] = {
    "pdf": (("pypdf", "pypdf"),),
    "docx": (("docx", "python-docx"), ("lxml", "lxml")),
    "pptx": (("pptx", "python-pptx"), ("lxml", "lxml")),
    "xlsx": (("openpyxl", "openpyxl"), ("defusedxml", "defusedxml")),
    "odt": (("lxml", "lxml"),),
    "odp": (("lxml", "lxml"),),
    "ods": (("lxml", "lxml"),),
    "html": (("lxml", "lxml"),),
    "htm": (("lxml", "lxml"),),
}
"""File type -> the (import name, distribution) pairs its parser imports when it meets such a
file: what `kbkit doctor` checks, and what a `parser-missing` refusal tells the user to install."""
