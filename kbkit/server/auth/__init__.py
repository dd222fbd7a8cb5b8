"""Who may use `kbkit serve --http`, and what each caller did (docs/adr/0031).

tokens.py    personal tokens: the tokens file, its checks, and the server's view of it
oauth.py     OAuth 2.1 access tokens (JWTs) checked against the issuer's keys
scopes.py    the scopes a caller is granted, and whether they reach the memory tools
gate.py      the ASGI gate: one principal per request, 401/403, scopes, session owners
audit.py     one line per MCP request: who, what, status, bytes, time
"""
