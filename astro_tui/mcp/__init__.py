"""`astro mcp`: astro's guarded tools served to other agents over the Model Context Protocol.

`command.py` is the CLI command; `server.py` the SDK server and what wraps each
call; `tools.py` the six tools; `shaping.py` how results are bounded and made
inert; `calls.py` the workers and cancellation; `record.py` the saved
conversation; `http.py` the HTTP safety. The database, its catalog, the tools
themselves and where conversations are saved come from the `Session`
(`session/core.py`), as for every front end.
"""
