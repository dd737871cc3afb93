"""The `astro` command: the full-screen app, plus `sql`, `shell`, `ask`, `eval`, `mcp`, `replay` and `config`.

A thin front end of a `Session` (`session/core.py`): the settings and the state
directory are read here, once, and every command drives the session made from
them. Every failure ends in one line on stderr and a non-zero exit, never a
traceback.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from astro_tui import __version__
from astro_tui.config import FLAG_LABELS, ConfigError, Settings, config_path, load_settings

if TYPE_CHECKING:
    from astro_tui.session import Session

EXIT_FAILURE = 1
EXIT_USAGE = 2


class _DefaultGroup(click.Group):
    """`astro db.duckdb` opens the app: anything that is not a subcommand is a target."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Click's own handling, except Ctrl+C: one line and exit 130, not "Aborted!"."""
        kwargs.pop("standalone_mode", None)
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except (click.exceptions.Abort, KeyboardInterrupt):
            _fail("interrupted", 130)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            if exc.ctx is not None and exc.ctx.command.name == "open" and exc.ctx.parent is not None:
                exc.ctx = exc.ctx.parent  # `open` is how `astro [TARGET]...` runs, not a command to name
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every option of every command, so `astro --help` is the whole reference."""
        super().format_options(ctx, formatter)
        self.format_commands(ctx, formatter)
        for name, command in sorted(self.commands.items(), key=lambda kv: kv[0] != "open"):
            _command_options(ctx, name, command, formatter)
        with formatter.section("Settings"):
            formatter.write_text(
                "Defaults, then the config file, then the environment (OPENAI_API_KEY, "
                "OPENAI_BASE_URL, ASTRO_MODEL), then flags; `astro config` shows each value "
                "and where it came from."
            )

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if getattr(ctx, "_astro_commands_done", False):
            return
        ctx._astro_commands_done = True  # type: ignore[attr-defined]
        super().format_commands(ctx, formatter)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            if args:
                self._refuse_mistyped_command(ctx, args[0])
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, ctx: click.Context, word: str) -> None:
        """`astro sqll "select 1"` is a usage error naming `sql`, not a missing file `sqll`: a
        word close to a command's name that names no file, URL or connection."""
        import difflib

        if (
            word.startswith(("-", "@"))
            or "://" in word
            or any(c in word for c in "*?[/\\.")
            or Path(word).exists()
        ):
            return
        names = [name for name, command in self.commands.items() if not command.hidden]
        close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=0.6)
        if close:
            raise click.UsageError(f"No such command '{word}'. Did you mean '{close[0]}'?", ctx)


def _command_options(
    parent: click.Context, name: str, command: click.Command, formatter: click.HelpFormatter
) -> None:
    sub = click.Context(command, info_name=name, parent=parent)
    usage = " ".join(command.collect_usage_pieces(sub))
    title = "astro [OPTIONS] [TARGET]... (the app)" if name == "open" else f"astro {name} {usage}"
    rows = [
        record
        for param in command.get_params(sub)
        if isinstance(param, click.Option) and "--help" not in param.opts
        for record in [param.get_help_record(sub)]
        if record is not None
    ]
    if isinstance(command, click.Group):
        for child_name, child in command.commands.items():
            child_ctx = click.Context(child, info_name=child_name, parent=sub)
            pieces = " ".join(child.collect_usage_pieces(child_ctx))
            rows.append((f"{child_name} {pieces}", child.get_short_help_str(80)))
    with formatter.section(title):
        if rows:
            formatter.write_dl(rows)
        else:
            formatter.write_text("(no options)")


def _model_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--base-url", help="OpenAI-compatible server URL (overrides OPENAI_BASE_URL).")(func)
    func = click.option("--model", help="Model name (overrides ASTRO_MODEL).")(func)
    return func


def _scope_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--hide",
        multiple=True,
        metavar="PATTERN",
        help="Keep schema[.table[.column]] (globs with *) away from the model; repeatable; adds to "
        "the config file's hide = [...].",
    )(func)


def _limit_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = _scope_option(func)
    func = click.option("--timeout", metavar="SECONDS", help="Query time limit in seconds (default 30).")(
        func
    )
    func = click.option("--max-rows", metavar="N", help="Row cap for results (default 100,000).")(func)
    func = click.option(
        "--memory-limit",
        metavar="SIZE",
        help="Memory a statement's results may use, e.g. 500MB (default 4GB).",
    )(func)
    return func


_FLAG_SETTINGS = {"timeout": "query_timeout_s", "max_rows": "row_cap"}


def _flag_values(flags: dict[str, Any]) -> dict[str, Any]:
    return {_FLAG_SETTINGS.get(k, k): v for k, v in flags.items()}


def _settings(**flags: Any) -> Settings:
    """The settings, every value checked by the one schema (`config.SCHEMA`); a bad one is a
    usage error naming the setting, where it came from and what is allowed."""
    try:
        return load_settings(_flag_values(flags), labels=FLAG_LABELS)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)


class _Failed(SystemExit):
    """A command's one-line failure, already printed; `message` for a `--json` caller."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code)
        self.message = message


def _fail(message: str, code: int = EXIT_FAILURE) -> NoReturn:
    from astro_tui.text import inert

    click.echo(f"astro: {inert(message)}", err=True)
    raise _Failed(code, message)


def _json_on_failure(record: Callable[[str, dict[str, Any]], str]) -> Callable[[Any], Any]:
    """For a command with `--json`: a failure that ends it early still prints exactly one JSON
    object on stdout, made by `record` from the one-line message and the command's arguments."""
    import functools

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except _Failed as exc:
                if kwargs.get("json_output"):
                    lines = exc.message.strip().splitlines()
                    click.echo(record(lines[0] if lines else "failed", kwargs))
                raise

        return run

    return decorate


def _error_object(message: str, _arguments: dict[str, Any]) -> str:
    import json

    from astro_tui.text import json_inert

    return json_inert(json.dumps({"error": message}, ensure_ascii=False))


_STOP_GRACE_S = 10.0
"""How long astro, asked to end, waits for its query to stop before it exits anyway."""


def _interruptible(work: Callable[[Any], Any]) -> Any:
    """Run blocking database work in a thread so Ctrl+C interrupts the query itself.

    SIGINT is handled here rather than raised: a KeyboardInterrupt while DuckDB runs
    a query in another thread aborts the whole process. SIGTERM and SIGHUP stop the
    query the same way before astro exits: a server engine's statement would
    otherwise run on without its client.
    """
    import signal
    import threading
    import time

    from astro_tui.data.database import CancelToken

    cancel = CancelToken()
    outcome: dict[str, Any] = {}
    received: list[int] = []

    def run() -> None:
        try:
            outcome["value"] = work(cancel)
        except BaseException as exc:
            outcome["error"] = exc

    def stop(signum: int, _frame: Any) -> None:
        received.append(signum)
        cancel.cancel()

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, stop) for signum in stops}
    try:
        thread = threading.Thread(target=run, name="astro-query", daemon=True)
        thread.start()
        ending: float | None = None
        while thread.is_alive():
            thread.join(0.1)
            if received and received[0] != signal.SIGINT:
                ending = ending or time.monotonic() + _STOP_GRACE_S
                if time.monotonic() > ending:
                    break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received and received[0] != signal.SIGINT:
        _fail(f"stopped by {signal.Signals(received[0]).name}", 128 + received[0])
    if cancel.cancelled:
        _fail("interrupted", 130)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _session(targets: tuple[str, ...], settings: Settings, **options: Any) -> Session:
    """A session on TARGETS with its database open (the sample's build progress on stderr)."""
    from astro_tui.config import state_dir
    from astro_tui.errors import AstroError
    from astro_tui.session import Building, Session

    session = Session(list(targets), settings, state_dir=state_dir(), **options)
    session.listen(lambda event: click.echo(event.text, err=True) if isinstance(event, Building) else None)
    try:
        session.database()
    except AstroError as exc:
        _fail(str(exc))
    return session


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="astro")
def main() -> None:
    """Ask a database questions in plain language; every value in the answer comes from the database.

    With no command, `astro [TARGET...]` opens the full-screen app. A TARGET is a
    PostgreSQL URL (postgresql://…), a Spark Connect URL (sc://host:15002), a named
    connection from the config file (@NAME), a DuckDB file (opened read-only), or
    CSV/TSV, Parquet and JSON files or quoted globs of them; with none, the sample
    warehouse.
    """


@main.command("open", hidden=True)
@click.argument("targets", nargs=-1)
@_model_options
@_limit_options
def open_app(targets: tuple[str, ...], **flags: Any) -> None:
    """Open the full-screen app on TARGETS (default: the sample warehouse)."""
    settings = _settings(**flags)
    from astro_tui.config import state_dir
    from astro_tui.data.engines import check_targets
    from astro_tui.data.errors import DataError
    from astro_tui.session import Session

    try:
        check_targets(list(targets), settings)
    except DataError as exc:
        _fail(str(exc))
    session = Session(list(targets), settings, state_dir=state_dir())
    session.start()  # the file opens while Textual imports
    from astro_tui.ui.app import run_app

    sys.exit(run_app(session))


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("sql", required=False)
@click.argument("targets", nargs=-1)
@click.option(
    "-f",
    "--file",
    "sql_file",
    metavar="FILE",
    help="Read the statement from FILE (- for standard input) instead of the SQL argument.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True
)
@_limit_options
def sql(sql: str | None, targets: tuple[str, ...], sql_file: str | None, fmt: str, **flags: Any) -> None:
    """Run one read-only SQL statement against TARGETS and print the result.

    SQL may be `-` to read the statement from standard input, as with `-f -`.
    """
    from astro_tui.errors import AstroError

    _refuse_unknown_options(click.get_current_context(), (sql, *targets))
    if sql_file is not None:
        targets = (sql, *targets) if sql is not None else targets
        sql = _read_statement(sql_file)
    elif sql is None:
        _fail("give the SQL, -f FILE, or - to read it from standard input")
    elif sql == "-":
        sql = _read_statement("-")
    settings = _settings(**flags)
    session = _session(targets, settings, one_shot=True)
    from astro_tui.data import text_table  # while the file opens

    out = sys.stdout
    printer: Any = (
        text_table.TablePrinter(out, max_rows=settings.row_cap)
        if fmt == "table"
        else text_table.CsvPrinter(out)
        if fmt == "csv"
        else text_table.JsonPrinter(out)
    )
    try:  # printed as it is read, inside the statement's limits, where the engine can
        result = _interruptible(lambda cancel: session.sql(sql, cancel=cancel, sink=printer)).result
    except AstroError as exc:
        out.flush()
        _fail(str(exc))
    finally:
        session.close()
    if result.streamed is not None:
        printer.finish(result)
    elif fmt == "table":  # read whole: printed a batch of rows at a time, which holds one batch
        text_table.write_table(result, out, max_rows=settings.row_cap)
    else:
        (text_table.write_csv if fmt == "csv" else text_table.write_json)(result, out)
    if result.truncated:
        click.echo(f"astro: {result.count_text()} (raise --max-rows to see more)", err=True)
    _finished()


def _refuse_unknown_options(ctx: click.Context, words: tuple[str | None, ...]) -> None:
    """`astro sql` lets its SQL start with a dash (`-- a comment` on the first line), so click
    passes unknown options through; a word that is spelled as an option is refused here."""
    import re

    for word in words:
        if word is not None and re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", word):
            import difflib

            known = [opt for param in ctx.command.params for opt in param.opts if opt.startswith("-")]
            close = difflib.get_close_matches(word.split("=")[0], known, n=1)
            raise click.NoSuchOption(word.split("=")[0], possibilities=close, ctx=ctx)


def _finished() -> None:
    global _done_early
    _done_early = True


def _read_statement(source: str) -> str:
    """Long statements come from a file or a pipe, as with psql -f and duckdb < file; bytes
    that are not UTF-8 reach the guard as lone surrogates, which it refuses in one line."""
    try:
        if source == "-":
            return sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
        return Path(source).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror or exc}")


@main.command()
@click.argument("command")
@click.argument("targets", nargs=-1)
@_scope_option
def shell(command: str, targets: tuple[str, ...], hide: tuple[str, ...]) -> None:
    """Run one metadata-shell COMMAND (ls, cat, grep, find, …) over the catalog of TARGETS."""
    from astro_tui.errors import AstroError
    from astro_tui.text import inert

    session = _session(targets, _settings(hide=hide))
    session.start(whole=False)  # the outline is read while the shell imports
    try:
        result = _interruptible(lambda cancel: session.shell(command, cancel=cancel))
    except AstroError as exc:
        _fail(str(exc))
    finally:
        session.close()
    if result.output:
        stream_err = result.exit_code == EXIT_USAGE
        click.echo(inert(result.output.rstrip("\n")), err=stream_err)
    _finished()
    sys.exit(result.exit_code)


def _ask_failure(message: str, arguments: dict[str, Any]) -> str:
    import io

    from astro_tui.headless.ask import json_failure

    out = io.StringIO()
    json_failure(arguments["question"], message, out)
    return out.getvalue().rstrip("\n")


def _no_model(json_output: bool) -> NoReturn:
    """The instructions at length, or for `--json` one line (the JSON object says it too)."""
    if json_output:
        _fail("no model is configured (run without --json to see how to set one)", EXIT_USAGE)
    from astro_tui.llm.errors import model_not_configured_message

    click.echo(model_not_configured_message(), err=True)
    sys.exit(EXIT_USAGE)


@main.command()
@click.argument("question")
@click.argument("targets", nargs=-1)
@click.option("--json", "json_output", is_flag=True, help="Print exactly one JSON object on stdout.")
@_model_options
@_limit_options
@_json_on_failure(_ask_failure)
def ask(question: str, targets: tuple[str, ...], json_output: bool, **flags: Any) -> None:
    """Answer QUESTION about TARGETS in one headless turn: progress on stderr, answer on stdout."""
    settings = _settings(**flags)
    if not settings.model_configured:
        _no_model(json_output)
    session = _session(targets, settings)
    import asyncio

    from astro_tui.headless.ask import run_ask

    try:
        code = asyncio.run(
            run_ask(question, session, json_output=json_output, out=sys.stdout, err=sys.stderr)
        )
    except KeyboardInterrupt:
        if sys.stderr.isatty():
            click.echo("\r\x1b[K", nl=False, err=True)  # the progress line drawn in place
        _fail("interrupted", 130)
    finally:
        session.close()
    sys.exit(code)


@main.command("eval")
@click.argument("questions", required=False, metavar="[QUESTIONS.jsonl]")
@click.argument("targets", nargs=-1)
@click.option("--json", "json_output", is_flag=True, help="Print exactly one JSON object on stdout.")
@_model_options
@_limit_options
@_json_on_failure(_error_object)
def eval_command(questions: str | None, targets: tuple[str, ...], json_output: bool, **flags: Any) -> None:
    """Score the configured model on QUESTIONS (JSON Lines of question + gold SQL) against TARGETS.

    With no arguments, the question set shipped with the sample warehouse. Progress
    on stderr, a table (or --json) on stdout; exit 0 however many answers are wrong,
    1 when a gold query failed, 2 for an unusable file or model.
    """
    settings = _settings(**flags)
    import asyncio

    from astro_tui.errors import AstroError
    from astro_tui.headless.eval_report import EvalProgress, format_json, format_summary
    from astro_tui.headless.evaluation import (
        EvalAborted,
        EvalInputError,
        default_questions_path,
        evaluate,
        load_questions,
    )
    from astro_tui.llm import ChatClient, LLMError

    path = Path(questions) if questions is not None else default_questions_path()
    try:
        items = load_questions(path)
    except EvalInputError as exc:
        _fail(str(exc), EXIT_USAGE)
    if not settings.model_configured:
        _no_model(json_output)
    try:
        client = ChatClient(settings)
    except LLMError as exc:
        _fail(exc.message, EXIT_USAGE)
    session = _session(targets, settings, client=client)
    progress = EvalProgress(sys.stderr, len(items))

    async def run() -> Any:
        try:
            return await evaluate(items, session, on_start=progress.start, on_report=progress.report)
        finally:
            await client.aclose()

    try:
        summary = asyncio.run(run())
    except EvalAborted as exc:
        _fail(str(exc), exc.code)
    except AstroError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    finally:
        session.close()
    click.echo(format_json(summary) if json_output else format_summary(summary))
    sys.exit(EXIT_FAILURE if summary.gold_failed else 0)


@main.command()
@click.argument("args", nargs=-1, metavar="[CONVERSATION] [TARGET]...")
@click.option(
    "--to", "fmt", type=click.Choice(["ipynb", "marimo", "sql"]), default="ipynb", show_default=True
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="The file to write.")
@click.option("--force", is_flag=True, help="Overwrite the output file.")
@click.option(
    "--list", "list_only", is_flag=True, help="List saved conversations: id, date, target, question."
)
@click.option(
    "--check", is_flag=True, help="Run the answers again (on TARGETs if given) and name moved numbers."
)
@click.option("--json", "json_output", is_flag=True, help="With --check or --list: JSON on stdout.")
@_limit_options
@_json_on_failure(_error_object)
def replay(
    args: tuple[str, ...],
    fmt: str,
    output: Path | None,
    force: bool,
    list_only: bool,
    check: bool,
    json_output: bool,
    **flags: Any,
) -> None:
    """Take a conversation's verified answers out of astro: a notebook (ipynb, marimo) or a SQL
    script that runs the queries and asserts every quoted number.

    CONVERSATION is an id (`astro ask --json` prints it), a saved conversation file, or
    omitted for the latest. Every query is judged by the guard of the data first (TARGETs if
    given, else the conversation's): a file is written only when all pass. `--check` runs the
    answers again and prints each number that moved: exit 0 when none did, 1 when some did,
    2 when they cannot run.
    """
    from astro_tui.headless.replay import check_command, list_command, write_command

    settings = _settings(**flags)
    if list_only:
        sys.exit(list_command(settings, json_output))
    if check:
        sys.exit(check_command(args, settings, json_output, _interruptible))
    sys.exit(write_command(args, settings, fmt, output, force))


@main.group(invoke_without_command=True)
@_model_options
@_limit_options
@click.pass_context
def config(ctx: click.Context, **flags: Any) -> None:
    """Show the effective settings and where each comes from (default, file, environment, flag).

    Later sources win: defaults, then the config file, then the environment
    (OPENAI_API_KEY, OPENAI_BASE_URL, ASTRO_MODEL), then flags.
    """
    if ctx.invoked_subcommand is not None:
        return
    from astro_tui.config import inspect_settings
    from astro_tui.llm.errors import display_url
    from astro_tui.text import inert, redact_url

    try:
        settings, sources, problems = inspect_settings(_flag_values(flags), labels=FLAG_LABELS)
    except ConfigError as exc:  # the file cannot be read at all
        _fail(str(exc), EXIT_USAGE)
    path = config_path()
    click.echo(f"config file: {path}{'' if path.exists() else ' (not created)'}")
    rows: list[tuple[str, str, str]] = []
    for name, value in settings.as_dict().items():
        if name in ("connections", "connection_hide"):
            continue
        if name == "hide":
            value = ", ".join(value) if value else "(nothing hidden)"
        if name == "api_key":
            value = "(set)" if value else "(not set)"
        elif name == "base_url" and value:
            value = display_url(value)
        shown = value if value is not None else "(not set)"
        rows.append((name, inert(str(shown), keep_newlines=False), sources[name]))
    for name, url in sorted(settings.connections.items()):
        rows.append(
            (f"connection @{name}", inert(redact_url(url), keep_newlines=False), sources["connections"])
        )
        if settings.connection_hide.get(name):
            hidden = inert(", ".join(settings.connection_hide[name]), keep_newlines=False)
            rows.append(
                (f"connection @{name} hide", hidden, f"{sources['connections']} [connections.{name}]")
            )
    rows.append(_sample_row())
    key_width = max(len(r[0]) for r in rows)
    value_width = min(40, max(len(r[1]) for r in rows))
    for name, value, source in rows:
        source = source.replace(f"config file {path}", "file")  # the path is on the first line
        click.echo(f"{name.ljust(key_width)} = {value.ljust(value_width)}  ({source})")
    for problem in problems:
        click.echo(f"astro: {inert(str(problem), keep_newlines=False)}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)


def _sample_row() -> tuple[str, str, str]:
    """Where the sample warehouse is (the target `astro` opens without one), to name it."""
    from astro_tui.data.engines import sample_file

    path = sample_file(build=False)
    return ("sample warehouse", str(path), "built" if path.is_file() else "built on first use")


@config.command("set")
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    """Persist KEY = VALUE in the config file (written with mode 0600)."""
    from astro_tui.config import write_setting

    try:
        path = write_setting(key, value)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    click.echo(f"{key} saved in {path}")


from astro_tui.mcp.command import mcp as _mcp  # noqa: E402  (the command lives in its package)

main.add_command(_mcp)


_done_early = False
"""Set by a one-shot command once its session is closed and its output written."""


def run() -> NoReturn:
    """The `astro` process (the console script and `python -m astro_tui.cli`).

    A one-shot command (`sql`, `shell`) that has finished ends here without Python's
    teardown: freeing every module and DuckDB's library took ~60 ms, a fifth of what
    `astro sql` costs, with nothing left to do (the session is closed, its worker and
    directories gone, and no thread but daemons is left). Any other end, or a stream that
    cannot be flushed, exits as usual."""
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    alone = all(t.daemon for t in threading.enumerate() if t is not threading.main_thread())
    if _done_early and alone and isinstance(code, int):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
