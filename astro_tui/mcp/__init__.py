"""`astro mcp`: astro's guarded tools served to other agents over the Model Context Protocol.

`command.py` is the CLI command; `server.py` the SDK server and what wraps each
call; `tools.py` the six tools; `shaping.py` how results are bounded and made
inert; `calls.py` the workers and cancellation; `record.py` the saved
conversation; `http.py` the HTTP safety; `backend.py` the seam to the rest of
astro (to become the session core).
"""
