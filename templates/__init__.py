"""One jinja2 template per client entry shape; see kbkit/sync/clients.py for which client uses which."""
