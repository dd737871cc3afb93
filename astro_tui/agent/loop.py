"""The agent loop: stream a reply, run the tools it asks for, until an output tool answers.

One `Agent` per session, built by it (`session/core.py`). `run()` is an async
generator so every front end consumes the same events; cancelling the consuming task (or
`aclose()`) is the only way to stop a turn, and it leaves the history replayable:
a round whose tool calls did not all get results is dropped, and the question is
recorded as cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.conversations import (
    conversation_path,
    conversation_text,
    load_conversation,
    new_conversation_id,
)
from astro_tui.agent.events import (
    AgentEvent,
    Answer,
    Done,
    DoneReason,
    ErrorEvent,
    Notice,
    Reasked,
    RetryEvent,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallSkipped,
    ToolCallStarted,
    ToolResult,
    UsageEvent,
)
from astro_tui.agent.history import Entry, History, Turn, TurnStatus, short_summary
from astro_tui.agent.numbers import numbers_in_text
from astro_tui.agent.prompts import schema_digest, small_system_prompt, system_prompt
from astro_tui.agent.provenance import saved_answer
from astro_tui.agent.registry import ParsedCall, ToolOutcome, ToolRegistry
from astro_tui.agent.templates import MAX_OUTPUT_CHARS
from astro_tui.agent.text_answer import result_answer, traced_answer
from astro_tui.agent.tools import ToolContext, build_registry
from astro_tui.agent.tools.context import TURN_CANCEL
from astro_tui.agent.workspace import Workspace
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.results import QueryResult
from astro_tui.errors import error_line
from astro_tui.files import atomic_write_text
from astro_tui.llm import (
    ChatClient,
    Completion,
    LLMError,
    ToolCallDelta,
    deadline_error,
    truncation_error,
)
from astro_tui.llm.messages import ToolCallRequest
from astro_tui.llm.text_tool_calls import recover_tool_calls, sql_block

CALLS_LEFT_WARNING = 3
TEXT_CALLS_NOTICE = (
    "the model server returned the tool call as text and astro read it as a call; "
    "for real tool calls start llama-server with --jinja, or vLLM with --enable-auto-tool-choice"
)
REASK_INSTRUCTION = (
    "Your reply did not go through a tool, so none of its values can be shown as verified. "
    "Answer again with an output tool: submit_result, submit_observation or render_chart "
    "for an answer from the data (run the SQL first), or send_message if you need to ask "
    "the user something or the question is not about the data."
)
SMALL_REASK_QUERY = "Reply with one SQL query that answers the question, in a ```sql block."
SMALL_EMPTY_HINT = (
    "The query returned no rows. If that is not the answer, check the values your filters use "
    "and reply with a corrected query in a ```sql block."
)
SMALL_REASK_ANSWER = (
    "Answer the question in one short sentence, copying the values exactly as the result shows them."
)


@dataclass
class _Tally:
    tool_calls: int = 0
    completions: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reported: int = 0
    model_s: float = 0.0
    tools_s: float = 0.0

    def add(self, completion: Completion) -> UsageEvent | None:
        usage = completion.usage
        if usage is None:
            return None
        event = UsageEvent(
            usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cached_tokens or 0
        )
        self.prompt_tokens += event.prompt_tokens
        self.completion_tokens += event.completion_tokens
        self.total_tokens += event.total_tokens
        self.cached_tokens += event.cached_tokens
        self.reported += 1
        return event

    def usage(self) -> UsageEvent | None:
        if not self.reported:
            return None
        return UsageEvent(self.prompt_tokens, self.completion_tokens, self.total_tokens, self.cached_tokens)

    def done(self, reason: DoneReason) -> Done:
        return Done(reason, self.tool_calls, self.usage(), self.completions)


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException


class _Stop(Exception):
    """Ends a turn without an answer: `_turn` records the note, then yields the error and Done."""

    def __init__(self, message: str, kind: str, reason: DoneReason) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The conversation file's text, taken on the event loop, where the turns cannot change."""

    generation: int
    path: Path
    text: str


@dataclass
class TurnTimings:
    """Where the last turn's time went; the benchmark subtracts model and tool time from the total."""

    total_s: float = 0.0
    model_s: float = 0.0
    tools_s: float = 0.0
    tool_calls: int = 0
    completions: int = 0


_STREAM_END = object()


class Agent:
    """Answers questions about one database; keeps the conversation and the workspace."""

    def __init__(
        self,
        db: Database,
        catalog: Catalog,
        settings: Settings,
        *,
        state_dir: Path,
        client: ChatClient | None = None,
        today: dt.date | None = None,
    ) -> None:
        self.db = db
        self.catalog = catalog
        self.settings = settings
        self.state_dir = state_dir
        self._client = client
        self._owns_client = client is None
        self._today = today
        self.workspace = Workspace()
        self.notes = ContextNotes(state_dir, db.key, db.context_seed)
        self._ctx = ToolContext(db, catalog, settings, self.workspace, self.notes)
        self._small = settings.agent_profile == "small"
        self._text_protocol = settings.tool_protocol == "text"
        schema_in_prompt = self._small and schema_digest(catalog, settings.schema_prompt_tokens) is not None
        self.registry: ToolRegistry = build_registry(
            self._ctx, profile=settings.agent_profile, schema_in_prompt=schema_in_prompt
        )
        self._history = History()
        self._used_ids: set[str] = set()
        self.conversation_id = new_conversation_id()
        self._created = dt.datetime.now().isoformat(timespec="seconds")
        self._system: str | None = None
        self._running = False
        self.last_timings = TurnTimings()
        self._save_lock = threading.Lock()
        self._snapshots = 0
        self._written = 0

    # ------------------------------------------------------------------ session

    @property
    def turns(self) -> list[Turn]:
        return self._history.turns

    @property
    def model(self) -> str | None:
        return self._client.model if self._client is not None else self.settings.model

    def system_prompt(self) -> str:
        """Rendered once per conversation, so the prompt prefix stays byte-identical for caching."""
        if self._system is None and self._small:
            self._system = small_system_prompt(
                self.catalog,
                db_label=self.db.label,
                notes=self.notes.read(),
                today=self._today,
                dialect=self.db.dialect.name,
                budget_tokens=self.settings.schema_prompt_tokens,
            )
        if self._system is None:
            self._system = system_prompt(
                self.catalog,
                db_label=self.db.label,
                notes=self.notes.read(),
                today=self._today,
                dialect=self.db.dialect.name,
            )
        return self._system

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The small profile with the schema in its prompt sends none: its model writes ```sql."""
        if self._small and self.registry.names == ["run_sql"]:
            return []
        return self.registry.schemas()

    def messages(self) -> list[dict[str, Any]]:
        """What the next request would send (earlier turns condensed)."""
        return self._history.messages(self.system_prompt())

    def new_conversation(self) -> None:
        self._check_idle()
        self._history = History()
        self._used_ids.clear()
        self.workspace.clear()
        self._ctx.reset_session()
        self.conversation_id = new_conversation_id()
        self._created = dt.datetime.now().isoformat(timespec="seconds")
        self._system = None

    def resume(self, conversation_id: str) -> None:
        """Continue a saved conversation; its results are not kept, but df_N names keep counting."""
        self._check_idle()
        header, turns = load_conversation(self.state_dir, conversation_id)
        self._history = History(turns)
        for turn in turns:
            self._history.rollback_to_consistent(turn)
        self._used_ids = {
            call["id"]
            for turn in turns
            for entry in turn.entries
            for call in entry.message.get("tool_calls") or ()
            if isinstance(call, dict) and "id" in call
        }
        next_index = max([t.workspace_next for t in turns] + [1])
        for turn in turns:
            for entry in turn.entries:
                if entry.summary and entry.summary.startswith("df_"):
                    number = entry.summary[3:].split(":", 1)[0]
                    if number.isascii() and number.isdigit():
                        next_index = max(next_index, int(number) + 1)
        self.workspace.clear(next_index=next_index)
        self._ctx.reset_session()
        self.conversation_id = conversation_id
        self._created = str(header.get("created") or self._created)
        self._system = None

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    def _check_idle(self) -> None:
        if self._running:
            raise RuntimeError("a turn is running; cancel it first")

    def _snapshot(self) -> _Snapshot | None:
        if all(turn.came_to_nothing for turn in self._history.turns):
            return None
        self._snapshots += 1
        text = conversation_text(
            self.conversation_id,
            self._history.turns,
            db_key=self.db.key,
            db_label=self.db.label,
            model=self.model,
            created=self._created,
            client=self.db.client_info,
        )
        return _Snapshot(self._snapshots, conversation_path(self.state_dir, self.conversation_id), text)

    def _write(self, snapshot: _Snapshot) -> None:
        """Write (with fsync) in any thread; a snapshot older than the one on disk is dropped."""
        with self._save_lock:
            if snapshot.generation < self._written:
                return
            self._written = snapshot.generation
            with contextlib.suppress(OSError):  # a read-only project directory must not stop answering
                atomic_write_text(snapshot.path, snapshot.text)

    # ------------------------------------------------------------------ one turn

    async def run(self, question: str) -> AsyncIterator[AgentEvent]:
        """Events of one turn, ending with Done.

        Raises RuntimeError on the first iteration if another turn of this agent is
        still running; otherwise nothing but CancelledError (when the consumer
        cancels): any failure inside the turn becomes an ErrorEvent and a Done.
        """
        self._check_idle()
        self._running = True
        started = time.perf_counter()
        tally = _Tally()
        self._ctx.cancel = CancelToken()
        turn = self._history.begin(question, self.workspace.next_index)
        cancelled = False
        try:
            async with contextlib.aclosing(self._turn(turn, tally)) as events:
                async for event in events:
                    yield event
        except (asyncio.CancelledError, GeneratorExit):
            cancelled = True
            self._ctx.cancel.cancel()
            self._finish(turn, "cancelled", "(The person cancelled this question before it was answered.)")
            raise
        except Exception as exc:
            self._ctx.cancel.cancel()
            self._finish(turn, "error", "(This question failed with an internal error.)")
            yield ErrorEvent(f"internal error: {error_line(exc, 300)}")
            yield tally.done("error")
        finally:
            if turn.status == "open":
                self._finish(turn, "error", "(This question was not answered.)")
            turn.workspace_next = self.workspace.next_index
            try:
                snapshot = self._snapshot()
                if snapshot is not None and cancelled:  # no awaiting while cancelled or closed
                    self._write(snapshot)
                elif snapshot is not None:  # a whole file and an fsync: not on the event loop
                    await asyncio.to_thread(self._write, snapshot)
            finally:
                self._running = False
                self.last_timings = TurnTimings(
                    total_s=time.perf_counter() - started,
                    model_s=tally.model_s,
                    tools_s=tally.tools_s,
                    tool_calls=tally.tool_calls,
                    completions=tally.completions,
                )

    def _finish(self, turn: Turn, status: TurnStatus, note: str | None = None) -> None:
        if turn.status != "open":
            return
        self._history.rollback_to_consistent(turn)
        if note:
            turn.entries.append(Entry({"role": "assistant", "content": note}))
        turn.status = status

    def _client_or_error(self) -> ChatClient | LLMError:
        if self._client is None:
            try:
                self._client = ChatClient(self.settings)
            except LLMError as exc:
                return exc
        return self._client

    async def _turn(self, turn: Turn, tally: _Tally) -> AsyncIterator[AgentEvent]:
        """The rounds of one turn; every way of ending without an answer raises `_Stop`."""
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.settings.turn_deadline_s
            client = self._client_or_error()
            if isinstance(client, LLMError):
                raise _Stop(client.message, client.kind, "error")
            limits = self.settings
            results: list[tuple[str, QueryResult]] = []  # this turn's, which a text answer may cite
            while True:
                if tally.completions >= limits.max_completions:
                    raise _Stop(
                        f"stopped after {tally.completions} model replies without an answer "
                        f"(max_completions = {limits.max_completions}); try a narrower question",
                        "limit",
                        "limit",
                    )

                completion: Completion | None = None
                live: dict[int, str] = {}  # a streaming call's position in the reply → its call id
                began = time.perf_counter()
                try:
                    async with contextlib.aclosing(self._stream(client, deadline)) as stream:
                        async for item in stream:
                            if isinstance(item, Completion):
                                completion = item
                            elif isinstance(item, ToolCallDelta):
                                call_id = live.get(item.position)
                                if call_id is None:
                                    call_id = self._unique_id(item.call_id or f"call_{item.position}")
                                    live[item.position] = call_id
                                    yield ToolCallStarted(call_id, item.name)
                                if item.arguments:
                                    yield ToolCallArguments(call_id, item.arguments)
                            else:  # TextDelta, ReasoningDelta, RetryEvent: events as they are
                                yield item
                except LLMError as err:
                    raise _Stop(err.message, err.kind, "error") from None
                except TimeoutError:
                    raise _Stop(deadline_error(limits.turn_deadline_s).message, "timeout", "limit") from None
                finally:
                    tally.model_s += time.perf_counter() - began

                tally.completions += 1
                if completion is None:
                    completion = Completion(truncated=True)
                usage = tally.add(completion)
                if usage is not None:
                    yield usage
                if completion.truncated:
                    err = truncation_error(completion)
                    raise _Stop(err.message, err.kind, "error")

                if not completion.tool_calls:
                    recovered = recover_tool_calls(
                        completion.text, self.registry.names, in_prose=self._text_protocol
                    )
                    if recovered is None and self._small and (sql := sql_block(completion.text)):
                        recovered = [ToolCallRequest("sql_block", "run_sql", json.dumps({"sql": sql}), 0)]
                    if recovered is not None:
                        kept = completion.text if self._small else ""  # replayed as the model wrote it
                        completion = dataclasses.replace(completion, text=kept, tool_calls=recovered)
                        if not self._text_protocol:
                            yield Notice(TEXT_CALLS_NOTICE)
                if not completion.tool_calls:
                    text = completion.text.strip()
                    if not text:
                        raise _Stop(
                            "the model returned an empty reply; ask again or try another model",
                            "empty",
                            "error",
                        )
                    turn.entries.append(Entry({"role": "assistant", "content": completion.text}))
                    can_reask = (
                        tally.reasks < limits.max_reasks and tally.completions < limits.max_completions
                    )
                    # the full profile asks for an output tool first; the small one has none
                    tracing = bool(results) and (self._small or not can_reask)
                    traced = traced_answer(text, results) if tracing else None
                    if traced is not None:
                        turn.answer = saved_answer(traced)
                        self._finish(turn, "answer")
                        yield traced
                        yield tally.done("answer")
                        return
                    if can_reask:
                        tally.reasks += 1
                        instruction = self._reask_instruction(results)
                        turn.entries.append(Entry({"role": "user", "content": instruction}))
                        yield Reasked(instruction)
                        continue
                    self._finish(turn, "text")
                    if completion.finish_reason == "length":
                        yield ErrorEvent(
                            "the model's reply reached its length limit and may be cut short", "warning"
                        )
                    yield Answer(
                        kind="unverified",
                        text=text,
                        # the whole text is unverified; scanning a huge reply would stall the loop
                        unverified_numbers=tuple(dict.fromkeys(numbers_in_text(text[:MAX_OUTPUT_CHARS]))),
                    )
                    yield tally.done("text")
                    return

                calls = [
                    self.registry.parse(live.get(c.position) or self._unique_id(c.id), c.name, c.arguments)
                    for c in completion.tool_calls
                ]
                turn.entries.append(Entry(_assistant_message(completion.text, calls)))
                answer: Answer | None = None
                answered_with = ""
                for call in calls:
                    skipped = (
                        "not run: the turn already ended with an answer"
                        if answer is not None
                        else "not run: the tool call limit was reached"
                        if tally.tool_calls >= limits.max_tool_calls
                        else None
                    )
                    if skipped is not None:
                        turn.entries.append(_tool_entry(call, skipped))
                        yield ToolCallSkipped(call.call_id, call.name, skipped)
                        continue
                    tally.tool_calls += 1
                    if call.call_id not in live.values():
                        yield ToolCallStarted(call.call_id, call.name)
                    yield ToolCallFinished(call.call_id, call.name, call.arguments, call.summary)
                    began = time.perf_counter()
                    # The tool's thread copies this context: it keeps this turn's token even if it
                    # outlives the turn (the next turn replaces `self._ctx.cancel`).
                    token = TURN_CANCEL.set(self._ctx.cancel)
                    try:
                        async with asyncio.timeout_at(deadline):
                            outcome = await self.registry.invoke(call)
                    except TimeoutError:
                        self._ctx.cancel.cancel()
                        raise _Stop(
                            f"the turn ran past its {limits.turn_deadline_s:g} s deadline while {call.name} "
                            "was running; ask again or raise turn_deadline_s",
                            "timeout",
                            "limit",
                        ) from None
                    finally:
                        TURN_CANCEL.reset(token)
                        tally.tools_s += time.perf_counter() - began
                    content = self._with_budget_hint(outcome, call, tally)
                    summary = outcome.summary or short_summary(content)
                    turn.entries.append(_tool_entry(call, content, summary, outcome.shown))
                    yield ToolResult(
                        call.call_id,
                        call.name,
                        outcome.ok,
                        content,
                        outcome.elapsed_ms,
                        outcome.result,
                        outcome.result_name,
                    )
                    if outcome.ok and outcome.result is not None and outcome.result_name:
                        results.append((outcome.result_name, outcome.result))
                        if self._small and answer is None:
                            answer = self._small_answer(outcome, results, turn)
                            answered_with = "the result of run_sql"
                    if call.is_output and outcome.ok and isinstance(outcome.value, Answer):
                        answer, answered_with = outcome.value, call.name

                if answer is not None:
                    turn.answer = saved_answer(answer)
                    self._finish(turn, "answer", f"(Answered with {answered_with}.)")
                    yield answer
                    yield tally.done("answer")
                    return
                if tally.tool_calls >= limits.max_tool_calls:
                    raise _Stop(
                        f"stopped after {tally.tool_calls} tool calls without an answer "
                        f"(max_tool_calls = {limits.max_tool_calls}); try a narrower question",
                        "limit",
                        "limit",
                    )
        except _Stop as stop:
            self._finish(turn, stop.reason, f"(Not answered: {stop.message}.)")
            yield ErrorEvent(stop.message, kind=stop.kind)
            yield tally.done(stop.reason)

    def _small_answer(
        self, outcome: ToolOutcome, results: list[tuple[str, QueryResult]], turn: Turn
    ) -> Answer | None:
        """The small profile's model answers with a query: its result is the answer, unless it is
        empty the first time (then the model is told, and may check its filter values)."""
        assert outcome.result is not None and outcome.result_name is not None
        empty = [r for _, r in results if r.row_count == 0]
        if outcome.result.row_count == 0 and len(empty) == 1 and self.settings.max_tool_calls > len(results):
            turn.entries[-1].message["content"] += "\n" + SMALL_EMPTY_HINT
            return None
        return result_answer(outcome.result_name, outcome.result)

    def _reask_instruction(self, results: list[tuple[str, QueryResult]]) -> str:
        if not self._small:
            return REASK_INSTRUCTION
        return SMALL_REASK_ANSWER if results else SMALL_REASK_QUERY

    def _with_budget_hint(self, outcome: ToolOutcome, call: ParsedCall, tally: _Tally) -> str:
        left = self.settings.max_tool_calls - tally.tool_calls
        if (call.is_output or self._small) and outcome.ok:
            return outcome.content
        if 0 < left <= CALLS_LEFT_WARNING:
            plural = "s" if left > 1 else ""
            hint = f"({left} tool call{plural} left in this turn: answer with an output tool now.)"
            if self._small:
                hint = f"({left} {'queries' if left > 1 else 'query'} left: reply with the corrected query.)"
            return f"{outcome.content}\n{hint}"
        return outcome.content

    def _unique_id(self, call_id: str) -> str:
        """Some servers number calls from zero in every reply; ids must be unique in the history."""
        candidate = call_id or "call"
        n = 1
        while candidate in self._used_ids:
            n += 1
            candidate = f"{call_id or 'call'}_{n}"
        self._used_ids.add(candidate)
        return candidate

    async def _stream(self, client: ChatClient, deadline: float) -> AsyncIterator[Any]:
        """Model items and retry notices, merged: a retry is announced while the client waits.

        The stream runs in its own task feeding a queue, under one timer for the
        deadline (a timeout must never span a `yield`: it would cancel whatever the
        consumer is doing, so it lives in the task). Past the deadline the task
        posts a TimeoutError, raised here; closing this generator closes the stream.
        """
        queue: asyncio.Queue[Any] = asyncio.Queue()
        messages = self.messages()
        schemas = self.tool_schemas()

        async def pump() -> None:
            try:
                async with asyncio.timeout_at(deadline):
                    stream = client.stream(
                        messages, schemas, on_retry=lambda text: queue.put_nowait(RetryEvent(text))
                    )
                    async with contextlib.aclosing(stream) as items:
                        async for item in items:
                            queue.put_nowait(item)
            except Exception as exc:  # TimeoutError past the deadline
                queue.put_nowait(_Failure(exc))
            else:
                queue.put_nowait(_STREAM_END)

        task = asyncio.create_task(pump(), name="astro-model-stream")
        try:
            while True:
                item = await queue.get()
                if item is _STREAM_END:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})


def _assistant_message(text: str, calls: list[ParsedCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.replay_arguments},
            }
            for call in calls
        ],
    }


def _tool_entry(
    call: ParsedCall, content: str, summary: str | None = None, shown: str | None = None
) -> Entry:
    return Entry({"role": "tool", "tool_call_id": call.call_id, "content": content}, summary, shown)
