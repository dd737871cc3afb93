"""`astro replay`: write a conversation as a notebook or script, list conversations, check numbers.

Writing and `--check` take a conversation, then the targets whose guard judges
(and whose data a written file then reaches) instead of the data the
conversation names.

Results on stdout (the written path, the list, the moved numbers or `--json`),
failures as one line on stderr. `--check` exits 0 when no quoted number moved, 1
when some did, 2 when the answers cannot run (the conversation, its data or a
query); a cron job or CI step needs nothing else.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from astro_tui.config import Settings, state_dir
from astro_tui.errors import AstroError
from astro_tui.session import Session
from astro_tui.text import inert, json_inert

EXIT_MOVED = 1
EXIT_CANNOT = 2
_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def _error(message: str, json_output: bool = False) -> int:
    """One line on stderr; for `--json`, the one JSON object on stdout says it too."""
    print(f"astro: {inert(message)}", file=sys.stderr)
    if json_output:
        print(json_inert(json.dumps({"error": message.strip().splitlines()[0]}, ensure_ascii=False)))
    return EXIT_CANNOT


def list_command(settings: Settings, json_output: bool) -> int:
    from astro_tui.replay.listing import listing_lines

    found = Session([], settings, state_dir=state_dir()).replays()
    if json_output:
        rows = [
            {
                "id": c.id,
                "date": c.updated or c.created,
                "target": c.db_label or c.db_key,
                "question": c.title,
            }
            for c in found
        ]
        print(json_inert(json.dumps(rows, ensure_ascii=False)))
    elif not found:
        print("astro: no saved conversations yet", file=sys.stderr)
    else:
        print("\n".join(inert(line) for line in listing_lines(found)))
    return 0


def _conversation_and_targets(args: tuple[str, ...], folder: Path) -> tuple[str | None, list[str]]:
    """The first argument is the conversation when it is a saved id or a `.jsonl` file, else every
    argument is a target."""
    if args and (
        args[0].endswith(".jsonl")
        or _ID.match(args[0])
        or (folder / "conversations" / f"{args[0]}.jsonl").is_file()
    ):
        return args[0], list(args[1:])
    return None, list(args)


def write_command(
    args: tuple[str, ...], settings: Settings, fmt: str, output: Path | None, force: bool
) -> int:
    """`astro replay [CONVERSATION [TARGET…]] --to FMT`: judged on TARGETs when given; the first
    argument is always the conversation, so a mistyped id is an error, not a target."""
    folder = state_dir()
    conversation, targets = (args[0], list(args[1:])) if args else (None, [])
    session = Session([], settings, state_dir=folder)
    try:
        replay = session.load_replay(conversation)
        path = session.write_replay(replay, fmt, output, overwrite=force, targets=targets)
    except AstroError as exc:
        return _error(str(exc))
    numbers = sum(len(a.quoted) for a in replay.answers)
    print(
        f"astro: {len(replay.answers)} answer{'s'[: len(replay.answers) != 1]}, "
        f"{numbers} number{'s'[: numbers != 1]} asserted",
        file=sys.stderr,
    )
    print(path)
    return 0


def check_command(
    args: tuple[str, ...], settings: Settings, json_output: bool, interruptible: Callable[[Any], Any]
) -> int:
    """`astro replay [CONVERSATION] --check [TARGET…]`."""
    folder = state_dir()
    conversation, targets = _conversation_and_targets(args, folder)
    try:
        replay = Session([], settings, state_dir=folder).load_replay(conversation)
        session = Session.for_replay(replay, settings, state_dir=folder, targets=targets)
    except AstroError as exc:
        return _error(str(exc), json_output)
    try:
        report = interruptible(lambda cancel: session.check_replay(replay, cancel=cancel))
    except AstroError as exc:
        return _error(f"cannot check conversation {replay.id}: {exc}", json_output)
    finally:
        session.close()
    if json_output:
        print(json_inert(json.dumps(report.to_json(), ensure_ascii=False)))
    else:
        for moved in report.moved:
            print(inert(moved.line))
        if not report.moved:
            print(
                f"astro: {report.numbers} number{'s'[: report.numbers != 1]} in "
                f"{report.answers} answer{'s'[: report.answers != 1]} unchanged",
                file=sys.stderr,
            )
    return EXIT_MOVED if report.moved else 0
