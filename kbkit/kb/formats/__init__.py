"""Extractors for file types that are not plain text: each turns a format into Markdown or text."""
