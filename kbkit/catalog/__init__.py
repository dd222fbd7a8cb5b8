"""What kbkit knows about the world around it, as data: the agents and their skill folders, the
clients and their config files, the file types kbkit reads.

These tables sit at the bottom of kbkit's layers (docs/adr/0020): they import nothing of kbkit's
but each other, so the config model can validate names against them (`[sync] clients`,
`[skills] agents`, `[parsers] enabled`) and every part above can read them without a cycle.
"""
