"""Converters from document formats (office files, web pages, notebooks) to the Markdown kbkit
indexes and serves; each module reads one family of formats within the budgets of docs/adr/0018."""
