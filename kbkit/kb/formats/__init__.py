"""File formats: each file type kbkit reads becomes text here, within one budget.

    budget.py           every limit a hostile file is held to, and the meter that applies them
    base.py             ParsedText, the reader protocol, text decoding, the failure wrapper
    markdown.py         reads Markdown files (front matter, headings)
    rst.py              reads reStructuredText files
    plain.py            reads plain text files
    pdf.py              reads PDF files (pypdf)
    html.py             reads HTML pages (lxml), writing them as Markdown
    notebook.py         reads Jupyter notebooks, writing them as Markdown
    ooxml.py            reads Word, PowerPoint and Excel files, writing them as Markdown
    odf.py              reads OpenDocument files, writing them as Markdown
    archive.py          opens the zip containers of office files within the budget
    markdown_writer.py  writes Markdown: the converted formats' writer, code fences
    registry.py         extension -> reader (from kbkit/catalog/filetypes.py), loaded when first needed

Imports point down: budget <- base <- archive, markdown_writer <- the readers <- registry.
"""
