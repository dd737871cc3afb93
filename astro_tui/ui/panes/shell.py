"""The metadata shell in the catalog pane: the very shell the model's `shell` tool runs.

The shell is the session's (`Session.metadata_shell`, `Session.shell`). Commands
run in a thread (a recursive grep over 10,000 tables takes a moment), one at a
time, since the shell's working directory is state.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, RichLog, Static

from astro_tui.errors import AstroError, error_line
from astro_tui.text import inert
from astro_tui.ui.actions import bindings
from astro_tui.ui.history import History
from astro_tui.ui.inert import inert_text

if TYPE_CHECKING:
    from astro_tui.session import Session

_OUTPUT_CHARS = 20_000
_SCROLLBACK = 500
_AFTER_PAINT_WAIT_S = 1.0


class ShellInput(Input):
    """One command line with history (up/down) and tab completion."""

    class Completions(Message):
        """Tab found several ways to go on: the pane lists them."""

        def __init__(self, options: list[str]) -> None:
            super().__init__()
            self.options = options

    def __init__(self) -> None:
        super().__init__(placeholder="ls, cat, grep -ri email / …", id="shell-input", select_on_focus=False)
        self.recall = History()
        self.completer: Any = None

    def on_mount(self) -> None:
        if not getattr(self.app, "live_clocks", True):
            self.cursor_blink = False

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "up":
            entry = self.recall.previous(self.value)
            if entry is not None:
                self._replace(entry)
            event.stop()
            event.prevent_default()
        elif event.key == "down":
            entry = self.recall.next()
            if entry is not None:
                self._replace(entry)
            event.stop()
            event.prevent_default()
        elif event.key == "tab" and self.completer is not None and self.value.strip():
            event.stop()
            event.prevent_default()
            self._complete()

    def _replace(self, text: str) -> None:
        self.value = text
        self.cursor_position = len(text)

    def _complete(self) -> None:
        try:
            options = self.completer(self.value)
        except Exception:
            return
        if isinstance(options, str):
            options = [options]
        options = list(options or [])
        if len(options) == 1:
            self._replace(options[0])
        elif options:
            prefix = _common_prefix(options)
            if len(prefix) > len(self.value):
                self._replace(prefix)
            else:
                self.post_message(self.Completions(options))


class ShellLog(RichLog):
    """Output wrapped at the pane's width, and wrapped again when the width changes (zoom, a
    resize, the drawer): no character is cut off, and no sideways scrolling is needed."""

    def __init__(self) -> None:
        super().__init__(
            id="shell-log", wrap=True, markup=False, highlight=False, max_lines=5_000, min_width=10
        )
        self.entries: deque[Text] = deque(maxlen=_SCROLLBACK)
        self._wrapped_at = 0
        self._sized = False

    def add(self, text: Text) -> None:
        self.entries.append(text)
        self.write(text)
        if not self._sized:
            self.call_after_refresh(self._resize_if_laid_out)

    def on_show(self) -> None:
        self.call_after_refresh(self._resize_if_laid_out)

    def _resize_if_laid_out(self) -> None:
        """RichLog holds every write until a Resize with a width arrives, and Textual does not
        always send one to a log laid out while its pane was hidden (seen after a zoom): the
        output sat unseen in a 28×9 log. A log that has its width gets the event it missed."""
        if not self._sized and self.size.width:
            self.post_message(events.Resize(self.size, self.virtual_size, self.container_size))

    def on_resize(self, event: events.Resize) -> None:
        self._sized = self._sized or bool(event.size.width)
        width = self.scrollable_content_region.width
        if self._size_known and width != self._wrapped_at and self.entries:
            self.clear()
            for text in self.entries:
                self.write(text, scroll_end=False)
            self.scroll_end(animate=False, immediate=True)
        self._wrapped_at = width


def _common_prefix(options: list[str]) -> str:
    first, last = min(options), max(options)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


class ShellPane(Vertical):
    """Scrollback above, a prompt below; output is data-derived, so it is written inert."""

    BINDINGS = bindings("shell")

    class Ready(Message):
        """The metadata shell is built (in a worker: it imports the grep machinery, pandas among it)."""

        def __init__(self, shell: Any, error: str | None = None) -> None:
            super().__init__()
            self.shell = shell
            self.error = error

    class Output(Message):
        def __init__(self, command: str, output: str, exit_code: int, cwd: str) -> None:
            super().__init__()
            self.command = command
            self.output = output
            self.exit_code = exit_code
            self.cwd = cwd

    def __init__(self) -> None:
        super().__init__(id="shell-pane")
        self._session: Session | None = None
        self._shell: Any = None
        self._pending: list[str] = []  # commands typed before the shell was built
        self._lock = threading.Lock()
        self.border_title = "Shell"

    def compose(self) -> ComposeResult:
        yield ShellLog()
        with Horizontal(id="shell-line"):
            yield Static("$", id="shell-prompt")
            yield ShellInput()

    def _write(self, text: Text) -> None:
        self.query_one(ShellLog).add(text)

    @property
    def shell(self) -> Any:
        return self._shell

    def set_session(self, session: Session, after: threading.Event | None = None) -> None:
        """Build the session's shell in a worker (after `after` is set: the tree is on screen by
        then), over the catalog just read."""
        self._session = session
        self._shell = None
        self._build(session, after)

    @work(thread=True, exclusive=True, group="shell-build", exit_on_error=False, description="build shell")
    def _build(self, session: Session, after: threading.Event | None) -> None:
        if after is not None:
            after.wait(_AFTER_PAINT_WAIT_S)
        try:
            shell = session.metadata_shell()
        except AstroError as exc:
            self.post_message(self.Ready(None, error_line(exc)))
            return
        self.post_message(self.Ready(shell))

    def on_shell_pane_ready(self, message: ShellPane.Ready) -> None:
        message.stop()
        if message.shell is None:
            self._write(inert_text(f"the shell cannot start: {message.error}", "italic"))
            return
        self._shell = message.shell
        complete = getattr(self._shell, "complete", None)
        self.query_one(ShellInput).completer = complete
        self._update_prompt(str(getattr(self._shell, "cwd", "/")))
        for line in ("metadata shell:", "ls cd cat head tree", "find grep wc sample", "pipes work; help"):
            self._write(Text(line, style="dim"))
        pending, self._pending = self._pending, []
        if pending:
            self._run(pending)

    def _update_prompt(self, cwd: str) -> None:
        self.query_one("#shell-prompt", Static).update(inert_text(f"{inert(cwd, keep_newlines=False)} $"))

    @on(Input.Submitted, "#shell-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit(event.value)

    def submit(self, command: str) -> None:
        """Run a command as if typed at the prompt."""
        command = command.strip()
        field = self.query_one(ShellInput)
        field.value = ""
        if not command:
            return
        field.recall.add(command)
        self._write(inert_text(f"$ {command}", "bold"))
        if self._shell is None:
            if not self._pending:
                self._write(Text("the catalog is still loading; this runs when it is ready", style="italic"))
            self._pending.append(command)
            return
        self._run([command])

    @work(thread=True, group="shell", exit_on_error=False, description="run shell command")
    def _run(self, commands: list[str]) -> None:
        session, shell = self._session, self._shell
        assert session is not None
        for command in commands:
            with self._lock:
                result = session.shell(command)  # the shell reports its errors itself, as lines
                cwd = str(getattr(shell, "cwd", "/"))
            self.post_message(self.Output(command, result.output, result.exit_code, cwd))

    def on_shell_input_completions(self, message: ShellInput.Completions) -> None:
        message.stop()
        self._write(inert_text("  ".join(message.options)))

    def on_shell_pane_output(self, message: ShellPane.Output) -> None:
        message.stop()
        text = message.output
        if len(text) > _OUTPUT_CHARS:
            text = text[:_OUTPUT_CHARS] + "\n… (output cut in the pane)"
        if text:
            self._write(inert_text(text.rstrip("\n"), "" if message.exit_code == 0 else "italic"))
        if message.cwd:
            self._update_prompt(message.cwd)
