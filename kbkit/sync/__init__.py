"""Writing kbkit's outputs into the repository: client configs and the managed .gitignore block."""
