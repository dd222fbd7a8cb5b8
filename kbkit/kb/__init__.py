"""The knowledge base: parsing, ignore rules, the SQLite index, guarded reads and search."""
