"""What a hostile model asks the agent to run, shared by the agent, MCP and doc tests."""

from __future__ import annotations

CROSS_JOIN = "-- a runaway cross join\nSELECT count(*) FROM range(100000000) a, range(100000000) b"


TIMEOUT_S = 1.0
