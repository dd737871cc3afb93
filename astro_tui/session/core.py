"""One session: an opened database and everything done with it, for every front end.

The app, `astro sql|shell|ask|eval`, `astro mcp` and the Python API
(`astro_tui.open`) are thin front ends of a `Session`; none of them opens a database,
reads a catalog or builds the agent by itself. A session's life, top to bottom:

1. **Made** from targets (files, globs, `postgresql://…`, `sc://…`, `@NAME`; none for
   the sample warehouse), the settings and the state directory, each read once by
   the front end: nothing below the command line reads the environment. Nothing is
   opened yet.
2. **Opened** by `open()`, or on first use. `database()` is where a database is
   opened (`Database.open`; the sample warehouse is built first on a first run,
   `Building`), then `Opened`. `read_catalog()` reads the catalog: where the engine
   reads columns apart, the schemas and tables first (`CatalogOutlined`: a tree and
   `ls` need no more), then the whole of it (`CatalogLoaded`; a cached one can be on
   screen before the database can run anything); `open()` waits until statements run.
   Whatever needs columns (the agent, a card, `cat`, `grep`) waits for the whole. A
   failure is an `OpenFailed` or `CatalogFailed` event and an `AstroError` raised; `retry_open()` tries again.
   `start()` begins all this in a thread of the session's own, as soon as a front end
   knows its targets (the app, before it imports Textual); `open()` then waits for it.
3. **Used by the person.** `sql()` runs one guarded statement with the settings'
   limits, under a cancel token `cancel_sql()` fires; `preview()` shows a table's
   first rows; `shell()` runs the metadata shell, its `cd` kept. Every result joins
   the session's log with a name (`result_log.py` is where a result gets it): `sql 1 · from
   sales.orders`, `preview orders`, `df_2 · revenue by region` for the model's own
   queries, `A1 Monthly revenue` for an answer's. `ResultAdded` says so.
4. **Asked.** `_build_agent()` is where the agent is built, once, on first need;
   `prepare_agent()` builds it ahead (the model client's import is the slow part:
   `AgentReady`, or `AgentFailed` when the model cannot be used). `run(question)`
   streams one turn's events (`agent/events.py`), naming the results the turn
   produced; `turn()` collects them into a `Reply`; `ask()` does the same for a
   script or a notebook. A conversation is saved after every turn;
   `new_conversation()`, `conversations()`, `resume()`; `notes()` reads the context
   notes the model keeps about this database. `isolated()` is a session over the
   same database whose notes and conversations are thrown away (`astro eval`).
5. **Lent** to an agent outside astro (`astro mcp`): `tools()` is the agent's own tools
   without the agent, a set of their own for each of that agent's sessions, and
   `save_conversation()` keeps what it did where `/resume` finds it.
6. **Exported**: `export()` writes a result as CSV, Parquet or JSON (`ExportFinished`).
7. **Closed** by `close()` or the end of a `with` block: the person's running query
   is stopped, the database and the model client closed; nothing outlives it.

Listeners (`listen()`) receive every event in the thread that caused it: the
opening thread, the thread that ran a query, or the event loop a turn runs on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from astro_tui.data.cancel import CancelToken
from astro_tui.data.errors import DataError, TargetError
from astro_tui.errors import AstroError, error_line
from astro_tui.session.events import (
    AgentFailed,
    AgentReady,
    Building,
    CatalogFailed,
    CatalogLoaded,
    CatalogOutlined,
    ExportFinished,
    FirstRows,
    Opened,
    OpenFailed,
    QueryFailed,
    SessionEvent,
)
from astro_tui.session.result_log import ResultLog, sql_title
from astro_tui.session.results import AskFailed, Reply, Result
from astro_tui.session.threads import Runner, Start
from astro_tui.text import one_line

if TYPE_CHECKING:
    from astro_tui.agent.conversations import ConversationInfo
    from astro_tui.agent.events import AgentEvent
    from astro_tui.agent.history import Turn
    from astro_tui.agent.loop import Agent
    from astro_tui.agent.registry import ToolRegistry
    from astro_tui.catalog.shell import Shell, ShellResult
    from astro_tui.config import Settings
    from astro_tui.data.catalog_model import Catalog, Table
    from astro_tui.data.database import Database
    from astro_tui.data.results import QueryResult, RowSink
    from astro_tui.llm import ChatClient
    from astro_tui.replay import CheckReport, Replay

T = TypeVar("T")
Listener = Callable[[SessionEvent], None]

PREVIEW_ROWS = 100


class SessionClosed(AstroError):
    """The session was closed; open another."""


class ModelUnavailable(AstroError):
    """The agent cannot be built (the model client would not load); the message says why."""


class Session:
    """One opened database and what is done with it (see the module docstring)."""

    def __init__(
        self,
        targets: Sequence[str],
        settings: Settings,
        *,
        state_dir: str | os.PathLike[str],
        client: ChatClient | None = None,
        one_shot: bool = False,
    ) -> None:
        self.targets = [os.fspath(t) for t in targets]
        self.one_shot = one_shot
        """A command that runs once and ends (`astro sql`): the database may run statements in
        this process, and a limit then ends the process (`Database.open`)."""
        self.settings = settings
        self.state_dir = Path(state_dir)
        self.db: Database | None = None
        self.catalog: Catalog | None = None
        """The whole catalog, once read."""
        self._outline: Catalog | None = None
        self._catalog_lock = threading.Lock()
        self._client = client
        self._owns_db = True
        self._listeners: list[Listener] = []
        self._open_lock = threading.RLock()
        self._agent_lock = threading.Lock()
        self._lock = threading.Lock()
        self._agent: Agent | None = None
        self._agent_error: str | None = None
        self._log = ResultLog(self._emit)
        self._logged: list[Result] = []  # what the last event of a turn added to the log
        self._sql_cancel: CancelToken | None = None
        self._shell: Shell | None = None
        self._shell_lock = threading.Lock()
        self._runner: Runner | None = None
        self._closed = False
        self._start: Start | None = None
        self._named = threading.Event()
        """Set whenever an outline or a whole catalog is read (and when a start ends)."""
        self._unheard: list[SessionEvent] | None = None
        """Events a start had before anyone listened, for the first listener."""
        self._listen_lock = threading.RLock()

    @classmethod
    def over(
        cls, db: Database, settings: Settings, *, state_dir: Path, client: ChatClient | None = None
    ) -> Session:
        """A session over a database the caller opened and will close itself."""
        session = cls([], settings, state_dir=state_dir, client=client)
        session.db, session._owns_db = db, False
        return session

    # ------------------------------------------------------------------ events

    def listen(self, listener: Listener) -> None:
        """Call `listener` with every event from now on (see the module docstring); the first
        listener hears first, in order, what an open begun by `start()` had before it came."""
        with self._listen_lock:
            self._listeners.append(listener)
            for event in self._unheard or ():
                listener(event)
            self._unheard = None

    def _emit(self, event: SessionEvent) -> None:
        if self._unheard is not None:  # a start, no listener yet: kept, or heard after the kept
            with self._listen_lock:
                if self._unheard is not None:
                    self._unheard.append(event)
                    return
        for listener in list(self._listeners):
            listener(event)

    # ------------------------------------------------------------------ opening

    @property
    def label(self) -> str:
        return self.db.label if self.db is not None else ""

    def open(self) -> Session:
        """Open the database, read its catalog and wait until statements run; raises AstroError.
        After `start()`, this waits for that open (and raises its failure) rather than reading again."""
        started = self._start
        if started is not None:
            started.wait()
            self._catalog()
            self._ready()
            return self
        self.database()
        self.read_catalog()
        self._ready()
        return self

    def start(self, *, whole: bool = True) -> None:
        """Begin opening now, in a thread of the session's own, for a front end that knows its
        targets before it can show anything (the app imports Textual meanwhile: a second and
        more, in which the file opens and its outline is read). The session stays the one owner
        of the open: `open()` waits for this one, the catalog and the shell wait for what it
        reads, and what it emits before anyone listens goes to the first listener. `whole`:
        the whole catalog and a database ready for statements, as `open()`; else the outline
        alone (`astro shell`)."""
        with self._listen_lock:
            if self._start is not None or self._closed:
                return
            if not self._listeners:
                self._unheard = []
            self._start = Start(lambda: self._open_all(whole), self._named)

    def _open_all(self, whole: bool) -> None:
        """What a start does in its thread: the database, the catalog (`whole`: all of it, and
        a database ready for statements; else the outline)."""
        self.database()
        with self._catalog_lock:
            if self.catalog is None:
                self._read(whole=whole)
        if whole:
            self._ready()

    def database(self) -> Database:
        """The opened database, opening it on first use."""
        with self._open_lock:
            if self._closed:
                raise SessionClosed("the session is closed")
            if self.db is None:
                from astro_tui.data.database import Database

                try:
                    db = Database.open(
                        self.targets, self.settings, on_build=self._building, one_shot=self.one_shot
                    )
                except Exception as exc:
                    raise self._open_failed(exc) from None
                with self._lock:  # closed while it opened (quit during a build): close it too
                    closed = self._closed
                    self.db = None if closed else db
                if closed:
                    db.close()
                    raise SessionClosed("the session is closed")
                self._emit(Opened(db.label))
            return self.db

    def _building(self, text: str) -> None:
        self._emit(Building(text))

    def read_catalog(self) -> Catalog:
        """Read the catalog (again), its outline first: a cached one can come before the
        database runs anything."""
        with self._catalog_lock:
            self.catalog = self._outline = None
            return self._read(whole=True)

    def _read(self, *, whole: bool) -> Catalog:
        """With the catalog lock held: the outline if none is read yet, then (`whole`) the
        columns; the whole catalog, or the outline."""
        from astro_tui.catalog.introspect import load_catalog, load_outline

        db = self.database()
        try:
            if self.catalog is None and self._outline is None:
                found = load_outline(db)
                if found.complete:
                    self.catalog = found
                else:
                    self._outline = found
                    self._emit(CatalogOutlined(found))
                self._named.set()  # an `ls` waiting on a start need not wait for the columns
            if self.catalog is None and whole:
                self.catalog = load_catalog(db)
        except TargetError as exc:
            raise self._open_failed(exc) from None
        except Exception as exc:
            message = f"cannot read the catalog: {error_line(exc)}"
            self._emit(CatalogFailed(message))
            raise DataError(message) from exc
        self._named.set()
        if self.catalog is not None:
            self._outline = None
            self._emit(CatalogLoaded(self.catalog))
            return self.catalog
        assert self._outline is not None
        return self._outline

    def retry_open(self) -> None:
        """After a failure: the server may be back, the file fixed or its lock released."""
        self._start = None
        if self.db is None:
            self.open()
        else:
            self.read_catalog()
            self._ready()

    def _ready(self) -> None:
        try:
            self.database().ready()
        except Exception as exc:
            raise self._open_failed(exc) from None

    def _open_failed(self, exc: Exception) -> AstroError:
        """Report a failure to open in one line (`OpenFailed`); the error to raise for it."""
        message = str(exc) if isinstance(exc, AstroError) else f"cannot open the database: {error_line(exc)}"
        self._emit(OpenFailed(message))
        return exc if isinstance(exc, AstroError) else TargetError(message)

    def _catalog(self) -> Catalog:
        """The whole catalog: read now, or waited for while another thread reads it."""
        found = self.catalog
        if found is not None:
            return found
        started = self._start  # a retry may clear it meanwhile
        if started is not None:  # reading it, or failed: raised
            started.wait()
        with self._catalog_lock:
            return self.catalog if self.catalog is not None else self._read(whole=True)

    def _names(self) -> Catalog:
        """The catalog as far as it is read: at least every schema and table."""
        found = self.catalog or self._outline
        if found is not None:
            return found
        started = self._start
        if started is not None:
            started.wait_named()
            found = self.catalog or self._outline
            if found is not None:
                return found
        with self._catalog_lock:
            return self.catalog or self._outline or self._read(whole=False)

    # ------------------------------------------------------------------ the person's queries

    def sql(self, sql: str, *, cancel: CancelToken | None = None, sink: RowSink | None = None) -> Result:
        """Run one guarded, read-only statement with the settings' limits; blocking.

        `cancel_sql()` (Esc, Ctrl+C) stops it on the engine; `cancel` is the token to
        use when the caller holds its own. The result joins the log as `sql N · …`; a long
        one's first rows may be reported before (`FirstRows`). `sink`: see `Database.execute`.
        """
        db = self.database()
        token = cancel or CancelToken()
        with self._lock:
            self._sql_cancel = token
        failure: Exception | None = None
        try:
            heard = bool(self._listeners)  # else the first rows are not worth reading twice
            first = (lambda table: self._emit(FirstRows(table))) if heard else None
            result = db.execute(sql, cancel=token, first=first, sink=sink)
        except Exception as exc:
            failure = exc
        finally:
            with self._lock:
                if self._sql_cancel is token:
                    self._sql_cancel = None
        if failure is not None:
            self._emit(QueryFailed("sql", error_line(failure)))
            raise failure if isinstance(failure, AstroError) else DataError(error_line(failure))
        return self._log.add("sql", result, label=sql_title(sql))

    @property
    def sql_running(self) -> bool:
        """A statement of the person's is running (Esc would cancel it)."""
        return self._sql_cancel is not None

    def cancel_sql(self) -> bool:
        """Stop the person's running statement; False when none runs."""
        with self._lock:
            token = self._sql_cancel
        if token is None:
            return False
        token.cancel()
        return True

    def preview(self, table: Table, *, limit: int = PREVIEW_ROWS) -> Result:
        """A table's first rows, logged as `preview NAME`."""
        from astro_tui.catalog.introspect import sample_values
        from astro_tui.data.catalog_model import NOT_READ

        try:
            if table.columns is NOT_READ:  # a table of the outline: its columns are named under a scope
                whole = self._catalog().counterpart(table)
                if whole is None:
                    raise DataError(f"{table.sql_name} is no longer in the catalog")
                table = whole
            result = sample_values(self.database(), table, limit=limit)
        except Exception as exc:
            self._emit(QueryFailed("preview", error_line(exc)))
            raise exc if isinstance(exc, AstroError) else DataError(error_line(exc)) from None
        return self._log.add("preview", result, label=table.name)

    def metadata_shell(self) -> Shell:
        """The person's metadata shell, built on first use (it imports the grep machinery: a
        moment) over the catalog as far as it is read; a command that needs columns waits
        for the whole catalog (`Shell.run`)."""
        from astro_tui.catalog.shell import Shell

        catalog = self._names()
        with self._shell_lock:
            if self._shell is None or (self._shell.catalog is not catalog and self._shell.catalog.complete):
                self._shell = Shell(catalog, self.database(), whole=self._catalog)
            elif self._shell.catalog is not catalog:  # its outline, now whole
                self._shell.use(catalog)
            return self._shell

    def shell(self, command: str, *, cancel: CancelToken | None = None) -> ShellResult:
        """Run one metadata-shell command (`ls`, `cat`, `grep -ri`, …); one at a time, since
        the working directory is state."""
        shell = self.metadata_shell()
        with self._shell_lock:
            return shell.run(command, cancel=cancel)

    @property
    def results(self) -> list[Result]:
        """Every result of this session, oldest first (`result_log.py` names them)."""
        return self._log.results

    # ------------------------------------------------------------------ the model

    @property
    def agent(self) -> Agent | None:
        """The agent, once built."""
        return self._agent

    @property
    def agent_error(self) -> str | None:
        """Why the model cannot be used, once building the agent failed."""
        return self._agent_error

    @property
    def model(self) -> str | None:
        return self._client.model if self._client is not None else self.settings.model

    def prepare_agent(self) -> Agent:
        """Build the agent now rather than on the first question; blocking. Raises AstroError
        when the database, its catalog or the model client cannot be had."""
        if self._agent is not None:
            return self._agent
        db, catalog = self.database(), self._catalog()
        with self._agent_lock:
            if self._agent is not None:
                return self._agent
            if self._agent_error is not None:
                raise ModelUnavailable(self._agent_error)
            try:
                agent = self._agent = self._build_agent(db, catalog)
            except Exception as exc:
                self._agent_error = one_line(getattr(exc, "message", None) or error_line(exc), 400)
                self._emit(AgentFailed(self._agent_error))
                raise ModelUnavailable(self._agent_error) from None
        self._emit(AgentReady())
        return agent

    def _build_agent(self, db: Database, catalog: Catalog) -> Agent:
        """Where the agent is built: one per session, on this database, catalog and state."""
        if self._client is None:
            import openai  # noqa: F401  (the import is the slow part of the first request)
        from astro_tui.agent.loop import Agent

        return Agent(db, catalog, self.settings, state_dir=self.state_dir, client=self._client)

    async def run(self, question: str) -> AsyncIterator[AgentEvent]:
        """One turn's events, ending with `Done` (see `Agent.run`); the results it produces
        join the log as they come. Closing the iterator (or cancelling its task) stops the
        turn: the model's stream is closed and its running query interrupted."""
        import asyncio  # not at import: `astro sql` never needs it

        agent = self._agent or await asyncio.to_thread(self.prepare_agent)
        async with contextlib.aclosing(agent.run(question)) as events:
            async for event in events:
                self._logged = self._log.turn_event(event, question)
                yield event

    async def turn(self, question: str, on_event: Callable[[AgentEvent], None] | None = None) -> Reply:
        """One turn, collected; `on_event` sees its progress (text, tool calls, retries, usage)."""
        reply = Reply(question)
        async with contextlib.aclosing(self.run(question)) as events:
            async for event in events:
                if reply.take(event, self._logged) and on_event is not None:
                    on_event(event)
        reply.conversation_id = self._agent.conversation_id if self._agent is not None else None
        return reply

    def ask(self, question: str) -> Reply:
        """Answer one question, for a script or a notebook: blocking; raises AskFailed when the
        turn ends without an answer (no model, the server down, a limit reached)."""
        reply = self._run_blocking(self.turn(question))
        if reply.answer is None:
            failure = reply.failure()
            raise AskFailed(failure.message, failure.kind, reply)
        return reply

    def _run_blocking(self, work: Coroutine[Any, Any, T]) -> T:
        """Async work from synchronous code, on the session's own loop: the model client
        lives on one loop for the session's life, and a notebook already runs a loop."""
        if self._runner is None:
            self._runner = Runner()
        return self._runner.call(work)

    @property
    def conversation_id(self) -> str | None:
        return self._agent.conversation_id if self._agent is not None else None

    def new_conversation(self) -> None:
        """Earlier questions are forgotten (the saved conversation stays on disk)."""
        if self._agent is not None:
            self._agent.new_conversation()

    def conversations(self) -> list[ConversationInfo]:
        """Saved conversations about this database, newest first."""
        from astro_tui.agent.conversations import list_conversations

        return list_conversations(self.state_dir, self.database().key)

    def resume(self, conversation_id: str) -> list[Turn]:
        """Continue a saved conversation; its earlier turns, to show them."""
        agent = self.prepare_agent()
        agent.resume(conversation_id)
        return agent.turns

    def notes(self) -> tuple[str, Path]:
        """The context notes the model keeps about this database, and their file."""
        from astro_tui.agent.context_notes import ContextNotes

        db = self.database()
        notes = ContextNotes(self.state_dir, db.key, db.context_seed)
        try:
            return notes.read(), notes.path
        except (OSError, UnicodeDecodeError) as exc:
            raise AstroError(f"{notes.path}: {error_line(exc)}") from exc

    @contextlib.asynccontextmanager
    async def isolated(self) -> AsyncIterator[Session]:
        """A session over the same database, catalog and model client whose notes and
        conversations live in a temporary directory seeded with this session's notes:
        a trial (one `astro eval` question) sees the person's notes, changes nothing of
        theirs, and starts afresh."""
        from astro_tui.agent.context_notes import notes_path

        db, catalog = self.database(), self._catalog()
        with tempfile.TemporaryDirectory(prefix="astro-eval-") as tmp:
            trial = Session.over(db, self.settings, state_dir=Path(tmp), client=self._client)
            trial.catalog = catalog
            theirs = notes_path(self.state_dir, db.key)
            if theirs.is_file():
                mine = notes_path(trial.state_dir, db.key)
                mine.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(theirs, mine)
            try:
                yield trial
            finally:
                await trial.aclose()

    # ------------------------------------------------------------------ lent to an outside agent

    def tools(self, *, keep_results: int = 1) -> ToolRegistry:
        """The agent's tools without the agent, for a front end whose caller is itself a model
        (an MCP client): the same guard, lock and limits, on this session's database, catalog
        and notes. Each call gives a set of its own (its own `cd`, search index and workspace),
        one per outside session; the workspace keeps the last `keep_results` results, since
        the caller holds its results and a server must not hold every one. A tool's cancel
        token is the `TURN_CANCEL` of the thread that runs it (`agent/tools/context.py`)."""
        from astro_tui.agent.context_notes import ContextNotes
        from astro_tui.agent.tools import ToolContext, build_registry
        from astro_tui.agent.workspace import Workspace

        db, catalog = self.database(), self._catalog()
        notes = ContextNotes(self.state_dir, db.key, db.context_seed)
        workspace = Workspace(max_entries=keep_results)
        return build_registry(ToolContext(db, catalog, self.settings, workspace, notes))

    def save_conversation(self, conversation_id: str, turns: list[Turn], *, created: str, by: str) -> Path:
        """Save a conversation a front end kept itself (an outside agent's calls, one turn each)
        beside the agent's, in the same format, so `/resume` lists it for this database; `by`
        stands where the model's name goes. Atomic; raises OSError. Also once the session is
        closed: a call that ended as its server shut down is still kept."""
        from astro_tui.agent.conversations import save_conversation

        db = self.db if self.db is not None else self.database()
        return save_conversation(
            self.state_dir,
            conversation_id,
            turns,
            db_key=db.key,
            db_label=db.label,
            model=by,
            created=created,
            client=db.client_info,  # how `astro replay` reaches the data, as for the agent's own
        )

    # ------------------------------------------------------------------ export

    def export(
        self, result: Result | QueryResult, fmt: str, path: str | os.PathLike[str], *, overwrite: bool = False
    ) -> Path:
        """Write a result as csv, parquet or json; blocking. Raises ExportError."""
        from astro_tui.session.export import ExportError, write_result

        path = Path(os.fspath(path)).expanduser()
        table = result.result.table if isinstance(result, Result) else result.table
        try:
            written = write_result(table, fmt, path, overwrite=overwrite)
        except Exception as exc:
            message = error_line(exc)
            self._emit(ExportFinished(str(path), 0, message))
            raise exc if isinstance(exc, AstroError) else ExportError(message) from exc
        self._emit(ExportFinished(str(written), table.num_rows))
        return written

    # ------------------------------------------------------------------ replay

    def replays(self) -> list[ConversationInfo]:
        """Saved conversations of every database, newest first (`astro replay --list`)."""
        from astro_tui.replay.listing import replay_list

        return replay_list(self.state_dir)

    def load_replay(self, conversation: str | os.PathLike[str] | None = None) -> Replay:
        """A saved conversation (id, file, or the latest; the current one for the app) read for
        replay; raises ReplayError."""
        from astro_tui.replay import load_replay

        return load_replay(self.state_dir, os.fspath(conversation) if conversation is not None else None)

    def write_replay(
        self,
        replay: Replay,
        fmt: str,
        path: str | os.PathLike[str] | None = None,
        *,
        overwrite: bool = False,
        targets: Sequence[str] = (),
    ) -> Path:
        """Write a replay as an ipynb, marimo or SQL file; raises ReplayError, and then writes
        nothing. The conversation is hostile: every statement the file holds is judged first by
        the guard of the data it will run on — this session's, when it is open on the data the
        conversation names, else that data (or `targets`) opened for it, as `--check` does — and
        the file connects to exactly the data judged, never to one the conversation names."""
        from astro_tui.replay import ReplayError, write_replay

        chosen = Path(os.fspath(path)).expanduser() if path is not None else None
        own = self.db is not None and not targets and self.db.client_info == replay.client
        judging = (
            self
            if own
            else Session.for_replay(replay, self.settings, state_dir=self.state_dir, targets=targets)
        )
        try:
            db = judging.database()
            judging._ready()
            client = db.client_info
            if client is None:
                raise ReplayError(f"{db.label}: no client outside astro reaches this data; nothing written")
            return write_replay(
                replace(replay, client=client, label=db.label),
                fmt,
                chosen,
                overwrite=overwrite,
                judge=lambda sql: db.execute(sql, row_cap=1),
            )
        except ReplayError:
            raise
        except AstroError as exc:
            raise ReplayError(
                f"cannot judge conversation {replay.id}'s queries ({one_line(exc, 160)}); nothing written"
            ) from None
        finally:
            if judging is not self:
                judging.close()

    @classmethod
    def for_replay(
        cls, replay: Replay, settings: Settings, *, state_dir: Path, targets: Sequence[str] = ()
    ) -> Session:
        """A session on the data a conversation used (or on `targets`), to check or write it.

        A server the conversation names is reached only when astro saved it in its own state
        folder (the person's session opened it): a file from elsewhere could name an attacker's
        host, where the client would send PGPASSWORD or a token; then the person names the data.
        """
        from astro_tui.replay import ReplayError

        if targets:
            return cls(list(targets), settings, state_dir=state_dir)
        code = replay.code()
        here = (state_dir / "conversations").resolve()
        if (
            isinstance(replay.client, dict)
            and "url" in replay.client
            and replay.path.resolve().parent != here
        ):
            raise ReplayError(
                f"conversation {replay.id} names a server astro did not open here "
                f"({one_line(code.targets[0], 80)}): name the data to replay it on (astro replay FILE URL)"
            )
        return cls(list(code.targets), settings, state_dir=state_dir)

    def check_replay(self, replay: Replay, *, cancel: CancelToken | None = None) -> CheckReport:
        """Run a conversation's answers again on this session's data: the numbers that moved.
        Raises AstroError when the data cannot be opened or a query no longer runs."""
        from astro_tui.replay import check_replay

        db = self.database()
        self._ready()
        return check_replay(replay, lambda sql: db.execute(sql, cancel=cancel), db.label)

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Close the model client on the running loop, then everything else (`close`)."""
        if self._agent is not None and self._runner is None:
            await self._agent.aclose()
        self.close()

    def close(self) -> None:
        """Stop the person's running statement, close the model client and the database. It
        does not wait for an open in progress: that closes what it opened when it ends."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            db = self.db if self._owns_db else None
            runner, self._runner = self._runner, None
        self.cancel_sql()
        if runner is not None:
            if self._agent is not None:
                with contextlib.suppress(Exception):
                    runner.call(self._agent.aclose())
            runner.stop()
        if db is not None:
            db.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session {self.label or ' '.join(self.targets) or 'sample warehouse'}>"
