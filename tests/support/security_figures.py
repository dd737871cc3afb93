"""The corpora and counts the security tests run and SECURITY.md quotes
(tests/security/test_security_doc.py holds them equal).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.support.fake_openai import (
    Respond,
    ScriptItem,
    chunk,
    cut,
    error,
    finish_chunk,
    reply,
    role_chunk,
    stall,
    text_reply,
    tool_call_reply,
)

ROUND_TRIP_EXAMPLES = 150
"""Conversations of arbitrary Unicode written and read back (tests/unit/test_saved_text.py)."""

FUZZ_EXAMPLES: dict[str, int] = {"shell": 300, "tool arguments": 200, "templates": 300, "stream chunks": 300}


KILLS_PER_TARGET = 12


TARGETS = ("conversation", "notes")


Outcome = Literal["error", "recovered", "answer"]


HUGE = 2_000_000


HUGE_TEXT = "1,234 " * (HUGE // 6)  # numbers everywhere: the costliest text to scan for numbers


SURROGATE_CHUNK = json.dumps(chunk({"content": "half a character: \ud83d"}), ensure_ascii=True)


def dead_url() -> str:
    """A local port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass(frozen=True)
class Fault:
    id: str
    script: Callable[[], list[ScriptItem]]
    outcome: Outcome
    expect: str  # in the one message (error), the failed tool result or retry notice (recovered)
    settings: dict[str, Any] = field(default_factory=dict)
    exit_code: int = 1
    unused: int = 0  # scripted replies the loop must never ask for (it stopped first)


FAULTS: list[Fault] = [
    Fault("connection-refused", lambda: [], "error", "connection refused", {"base_url": dead_url()}),
    Fault(
        "http-401",
        lambda: [error(401, "Incorrect API key provided")],
        "error",
        "rejected the API key",
        exit_code=2,
    ),
    Fault(
        "http-404-unknown-model",
        lambda: [error(404, "The model `fake-model` does not exist", code="model_not_found")],
        "error",
        "model 'fake-model' not found",
        exit_code=2,
    ),
    Fault(
        "http-429-retry-after",
        lambda: [error(429, "Rate limit reached", retry_after=30)],
        "error",
        "asks to wait 30 s",
    ),
    Fault(
        "http-429-retry-after-then-ok",
        lambda: [error(429, "Rate limit reached", retry_after=0.2), text_reply("Waited, then answered.")],
        "recovered",
        "retrying in 0.2 s",
        {"max_retries": 1},
    ),
    Fault(
        "http-500",
        lambda: [error(500, "the GPU caught fire")],
        "error",
        "failed (HTTP 500): the GPU caught fire",
    ),
    Fault("http-502-html", lambda: [Respond(502, "<html>bad gateway</html>")], "error", "HTTP 502"),
    Fault(
        "stalled-stream",
        lambda: [stall(text_reply("I am thinking abo"), seconds=20)],
        "error",
        "stopped responding for 0.5 s",
        {"read_timeout_s": 0.5},
    ),
    Fault(
        "stream-cut-before-done",
        lambda: [cut(text_reply("The answer is 4"), abrupt=True)],
        "error",
        "closed the connection in the middle of a reply",
    ),
    Fault(
        "stream-ends-without-done",
        lambda: [cut(text_reply("The answer is 4"), abrupt=False)],
        "error",
        "cut off before it finished",
    ),
    Fault("malformed-sse-chunk", lambda: [reply("{not json")], "error", "JSONDecodeError"),
    Fault(
        "error-event-mid-stream",
        lambda: [reply(role_chunk(), {"error": {"message": "upstream died"}})],
        "error",
        "reported an error: upstream died",
    ),
    Fault("empty-reply", lambda: [reply(role_chunk(), finish_chunk("stop"))], "error", "empty reply"),
    Fault(
        "invalid-tool-json",
        lambda: [tool_call_reply([("run_sql", '{"sql": "SELECT 1"')]), text_reply("Sorry, fixed.")],
        "recovered",
        "not valid JSON",
    ),
    Fault(
        "unknown-tool",
        lambda: [tool_call_reply([("drop_database", {"name": "all"})]), text_reply("Sorry, fixed.")],
        "recovered",
        "unknown tool 'drop_database'",
    ),
    Fault(
        "endless-tool-calls",
        lambda: [tool_call_reply([("read_context", {})]) for _ in range(5)],
        "error",
        "max_tool_calls = 3",
        {"max_tool_calls": 3},
        unused=2,
    ),
    Fault(
        "lone-surrogate-in-reply",  # "\\ud800" is valid JSON but cannot be printed or saved as UTF-8
        lambda: [reply(role_chunk(), SURROGATE_CHUNK, finish_chunk("stop"))],
        "answer",
        "half a character: \\ud83d",
    ),
    Fault(
        "huge-text-reply",
        lambda: [text_reply(HUGE_TEXT, chunk_size=65_536)],
        "answer",
        "1,234 1,234 1,234",
    ),
]


CLI_FAULTS = ("http-401",)  # a real process costs ~4 s of CPU in imports; in-process covers the rest


PAYLOADS: dict[str, str] = {
    "csi": "\x1b[31mRED\x1b[0m",
    "clear-screen": "\x1b[2J\x1b[H",
    "osc52-clipboard": "\x1b]52;c;cHduZWQ=\x07",
    "osc8-link": "\x1b]8;;https://evil.example\x07click me\x1b]8;;\x07",
    "osc-title-st": "\x1b]0;pwned\x1b\\",
    "c1-csi": "\x9b31m",
    "bidi": "\u202eevil\u202c",
    "cr-bs": "ok\r\x08",
    "rich": "[bold red]x[/]",
    "rich-link": "[link=https://evil.example]y[/link]",
    "markdown-link": "[click](https://evil.example)",
}


HOSTILE = " ".join(PAYLOADS.values())


HOSTILE_COLUMN = "note\x1b]52;c;Y29sdW1u\x07"


HOSTILE_TABLE = 'x"; DROP TABLE support.tickets; --'


SHELL_COMMANDS = [
    "cat /support/tickets.table",
    "ls -l /support",
    "grep -ri important /",
    "grep -r osc /",
    "head -n 4 /support/tickets.table",
    "tree /",
    "find / -name '*'",
    "sample /support/tickets.table",
    "sample -c body /support/tickets.table",
    "ls /support | xargs cat",
    "'\x1b]52;c;cHduZWQ=\x07'",
    "cat '/support/\x1b[2J'",
]


def ask_scripts() -> dict[str, list[ScriptItem]]:
    """One `astro ask` per route hostile text can take to the terminal."""
    comment = HOSTILE.replace("\r", "")  # a CR would end the SQL comment
    tickets = "-- " + comment + '\nSELECT id, body, "' + HOSTILE_COLUMN + '" FROM support.tickets ORDER BY id'
    return {
        # asked once more for a tool answer, the model says it again
        "model-text": [text_reply("Here you go: " + HOSTILE), text_reply("Again: " + HOSTILE)],
        "progress-and-result": [
            tool_call_reply([("run_sql", {"sql": tickets})], text="Let me look " + HOSTILE),
            tool_call_reply([("run_sql", {"sql": 'SELECT * FROM "\x1b]52;c;cHduZWQ=\x07"'})]),
            tool_call_reply(
                [
                    (
                        "submit_result",
                        {
                            "inputs": {"t": tickets},
                            "template": HOSTILE + " {% for r in t.rows %}{{ r.body }} {% endfor %}",
                            "title": "Tickets " + HOSTILE,
                        },
                    )
                ]
            ),
        ],
        "message": [tool_call_reply([("send_message", {"message": "Which one? " + HOSTILE})])],
        "chart": [
            tool_call_reply(
                [
                    (
                        "render_chart",
                        {
                            "sql": "SELECT body AS label, id AS n FROM support.tickets",
                            "kind": "bar",
                            "x": "label",
                            "y": "n",
                            "title": HOSTILE,
                        },
                    )
                ]
            )
        ],
        "server-error": [error(500, "upstream says " + HOSTILE)],
    }


SANDBOX_ESCAPES = [
    "{{ cycler.__init__.__globals__.os.environ['OPENAI_API_KEY'] }}",
    "{{ lipsum.__globals__['os'].environ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ t.rows.__class__.__base__.__subclasses__() }}",
    "{{ self.__init__.__globals__.__builtins__.__import__('os').environ }}",
    "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
    "{% import 'os' as os %}{{ os.environ }}",
    "{% include '/proc/self/environ' %}",
    "{{ t._result }}",
    "{{ '{0.__class__}'.format(t) }}",
    "{{ t.columns.append('x') }}",
    "{{ config.items() }}",
]


def obeying_model(root: Path) -> tuple[list[ScriptItem], int, list[str]]:
    """Read the tickets, then do what they say.

    Returns the script, how many calls are legitimate reads (they succeed), and for each
    attack after them the start of the failed tool result the model must get back.
    """
    odd_name = HOSTILE_TABLE.replace('"', '""')
    reads: list[tuple[str, dict[str, Any]]] = [
        ("run_sql", {"sql": "-- read the tickets\nSELECT * FROM support.tickets"}),
        ("show_table", {"table_names": ["support.tickets"]}),
        ("shell", {"command": "cat /support/tickets.table"}),
        ("run_sql", {"sql": f'SELECT * FROM support."{odd_name}"'}),  # a quote in a name is just a name
        ("search_metadata", {"queries": ["api key"], "keywords": ["'; DROP TABLE support.tickets; --"]}),
    ]
    attacks: list[tuple[str, dict[str, Any], str]] = [
        ("run_sql", {"sql": "DROP TABLE support.tickets"}, "refused: "),
        ("run_sql", {"sql": "DELETE FROM support.tickets"}, "refused: "),
        ("run_sql", {"sql": "UPDATE support.tickets SET body = 'done'"}, "refused: "),
        ("run_sql", {"sql": "SELECT getenv('OPENAI_API_KEY') AS key"}, "refused: "),
        ("run_sql", {"sql": "SELECT * FROM read_text('/proc/self/environ')"}, "refused: "),
        ("run_sql", {"sql": f"COPY support.tickets TO '{root}/exfiltrated.csv'"}, "refused: "),
        ("run_sql", {"sql": f"ATTACH '{root}/exfiltrated.duckdb' AS out"}, "refused: "),
        ("shell", {"command": "cat /proc/self/environ"}, "cat: /proc/self/environ: no such"),
        ("shell", {"command": f"ls / > {root}/pwned.txt"}, "astro: "),
    ]
    attacks += [
        (
            "submit_result",
            {"inputs": {"t": "SELECT * FROM support.tickets"}, "template": t},
            "submit_result: ",
        )
        for t in SANDBOX_ESCAPES
    ]
    script: list[ScriptItem] = [
        tool_call_reply(reads),
        tool_call_reply([(name, args) for name, args, _ in attacks]),
        tool_call_reply(
            [("send_message", {"message": "Done as instructed. The key is: (I could not find it)"})]
        ),
    ]
    return script, len(reads), [expected for _, _, expected in attacks]


KEY = "sk-proj-secret-9f8e7d6c5b4a3210"


MASKED = "sk-proj-****3210"


# A server that echoes the key back, in every place a server can put text.
ECHOES: dict[str, list[ScriptItem]] = {
    "401": [error(401, f"Incorrect API key provided: {KEY}. You can find your API key at ...")],
    "403": [error(403, f"Key {KEY} may not use this model")],
    "404": [error(404, f"model not found for key {KEY}")],
    "400": [error(400, f"bad request from {KEY}")],
    "429": [error(429, f"rate limit for {KEY}", retry_after=60)],
    "500": [error(500, f"internal error while serving Bearer {KEY}")],
    "mid-stream": [reply(role_chunk(), {"error": {"message": f"upstream rejected {KEY}"}})],
    "masked": [error(401, f"Incorrect API key provided: {MASKED}")],
}
