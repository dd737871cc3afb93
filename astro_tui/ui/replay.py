"""`/replay` and the palette's Replay: write the current conversation as a notebook or script.

It always asks where, proposing `astro-<id>.ipynb` in the working directory, and
asks again before replacing a file; the writing runs in a thread worker, which only
notifies.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from textual.app import App

from astro_tui.errors import AstroError
from astro_tui.session import Session
from astro_tui.text import inert


def replay_conversation(app: App[object], session: Session, arg: str) -> None:
    """`[FORMAT] [PATH]`: ask for the path (proposed) unless given, then write."""
    conversation = session.conversation_id
    if conversation is None:
        app.notify("No conversation to replay yet: ask a question first.", severity="warning")
        return
    try:
        parts = shlex.split(arg)
    except ValueError as exc:
        app.notify(f"/replay: {exc}", severity="warning", markup=False)
        return
    from astro_tui.replay import FORMATS

    fmt = parts[0].lower() if parts and parts[0].lower() in FORMATS else None
    rest = parts[1:] if fmt else parts
    if len(rest) > 1:
        app.notify("/replay takes a format and one path", severity="warning")
        return
    if not rest:
        from astro_tui.ui.screens.export import ExportScreen

        fmt = fmt or "ipynb"
        proposed = Path.cwd() / f"astro-{conversation}{FORMATS[fmt]}"
        screen = ExportScreen(
            conversation,
            f"{fmt} {shlex.quote(str(proposed))}",
            title="Replay the conversation",
            prompt="Format (ipynb, marimo or sql) and a path:",
            verb="writes",
        )
        app.push_screen(screen, lambda value: replay_conversation(app, session, value) if value else None)
        return
    path = Path(rest[0]).expanduser()
    if fmt is None:
        fmt = next((f for f, suffix in FORMATS.items() if suffix == path.suffix.lower()), "ipynb")
    if path.exists():
        from astro_tui.ui.screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                _write(app, session, conversation, fmt, path, overwrite=True)
            else:
                app.notify(f"Not written: {inert(str(path))} is left as it was.", markup=False)

        app.push_screen(ConfirmScreen("Overwrite?", f"{path} exists. Replace it?"), answered)
        return
    _write(app, session, conversation, fmt, path, overwrite=False)


def _write(
    app: App[object], session: Session, conversation: str, fmt: str, path: Path, *, overwrite: bool
) -> None:
    def work() -> None:
        try:
            replay = session.load_replay(conversation)
            written = session.write_replay(replay, fmt, path, overwrite=overwrite)
        except AstroError as exc:
            app.notify(f"Replay: {exc}", severity="error", markup=False)
            return
        app.notify(f"Wrote {inert(str(written))}: {len(replay.answers)} answer(s) that check their numbers.")

    app.run_worker(work, thread=True, group="replay", exit_on_error=False, description="write replay")
