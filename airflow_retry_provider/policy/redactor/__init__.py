"""The families of redaction, one module per kind of structure; ``policy/redact.py`` runs them.

- ``spans``: the reading primitives every family shares (a span, the mask, quoted values, bounded matching);
- ``judge``: whether a value found is a secret, by its key's meaning, its own meaning, its shape and its position;
- ``urls``: URLs and HTTP headers;
- ``assignments``: ``k=v`` in every syntax, YAML, XML, name/value pairs, reprs;
- ``commands``: command lines, protocol exchanges, connection calls, device configurations, parse errors;
- ``tables``: tables a CLI prints;
- ``shapes``: secrets known by their shape alone (PEM keys, vendor prefixes, crypt hashes, random runs).

Names with a leading ``_`` are the package's own: shared between its modules, used nowhere else.
"""
