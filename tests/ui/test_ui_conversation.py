"""The conversation pane against the fake model server: streaming, tools, answers, cancel, errors."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

from astro_tui.ui.screens.resume import ResumeScreen
from astro_tui.ui.widgets.answer_card import AnswerCard
from astro_tui.ui.widgets.markdown_text import StreamingMarkdown
from astro_tui.ui.widgets.tool_block import ToolBlock
from astro_tui.ui.widgets.turn import ReasoningBlock
from tests.support.fake_openai import (
    FakeOpenAI,
    error,
    reasoning_reply,
    stall,
    text_reply,
    tool_call_reply,
)
from tests.support.ui import (
    REVENUE_SQL,
    SIZE,
    log_text,
    make_app,
    notifications,
    plain,
    ready,
    shop_db,
    submit,
    wait_until,
)
from tests.support.ui_conversation import TOTAL_SQL, answer_script
from tests.support.waiting import HANG_GUARD_S

__all__ = ["shop_db"]


async def test_a_streamed_answer_appears(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    text = "Orders are spread **evenly** across five regions, about 400 each. " * 8
    fake_openai.script(reasoning_reply("Thinking about regions.", text, delay_s=0.002, chunk_size=4))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "how are orders spread?")
        await wait_until(pilot, lambda: not app.conversation.running)
        markdown = app.conversation.log_view.query(StreamingMarkdown).last()
        assert markdown.source == text
        assert markdown.has_class("-unverified")
        shown = log_text(app)
        assert (
            "unverified: the model's own words" in shown and "numbers: five, 400" in shown
        )  # a number word is a number too
        reasoning = app.conversation.query_one(ReasoningBlock)
        assert reasoning.collapsed, "reasoning folds away once the answer starts"
        assert app.conversation.question.text == ""


async def test_tool_blocks_collapse_and_expand(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "what was revenue by region?")
        await wait_until(pilot, lambda: not app.conversation.running)
        blocks = list(app.conversation.query(ToolBlock))
        assert [b.tool_name for b in blocks] == ["run_sql", "submit_result"]
        assert all(b.collapsed and b.state == "ok" for b in blocks)
        assert "-- revenue by region" in str(blocks[0].title)

        await pilot.click(blocks[0]._title)
        await pilot.pause()
        assert not blocks[0].collapsed
        assert REVENUE_SQL.split(" FROM")[0] in plain(blocks[0]._args)
        assert plain(blocks[0]._result)
        await pilot.click(blocks[0]._title)
        await pilot.pause()
        assert blocks[0].collapsed

        card = app.conversation.query_one(AnswerCard)
        assert card.has_class("-verified")
        assert "Total revenue was $9" in log_text(app) and "over 5 regions" in log_text(app)
        names = [e.name for e in app.results.entries]
        assert names[0] == "df_1 · what was revenue by region?", names
        assert {"A1 rev", "A1 total"} <= set(names)
        assert app.results.current is not None and app.results.current.name == "A1 rev"
        assert app.results.current.verified
        sql = plain(app.query_one("#sql-text"))
        assert "-- rev" in sql and "-- total" in sql


async def test_an_answer_with_a_typed_number_is_not_shown_as_verified(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    typed = {"inputs": {"total": TOTAL_SQL}, "template": "Revenue was {{ total.value | money }}, up 12%."}
    fake_openai.script(tool_call_reply([("submit_result", typed)]))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "revenue?")
        await wait_until(pilot, lambda: not app.conversation.running)
        card = app.conversation.query_one(AnswerCard)
        assert card.has_class("-unverified") and not card.has_class("-verified")
        shown = log_text(app)
        assert "⚠ Not verified: a number was typed by the model" in shown and "✓ Verified" not in shown
        assert "typed by the model, not from the database: 12%" in shown
        assert app.results.current is not None and not app.results.current.verified


async def test_escape_cancels_the_turn(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(stall(text_reply("Let me think"), seconds=30))
    app = make_app(shop_db, fake_openai.settings(read_timeout_s=60))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "a slow question")
        await wait_until(pilot, lambda: "Let me think" in log_text(app))
        await pilot.press("escape")
        assert not app.conversation.running
        assert app.conversation.question.text == "a slow question"
        assert "cancelled" in log_text(app)
        assert fake_openai.wait_for_disconnect(), "the model request was closed"
        await wait_until(
            pilot, lambda: app.session.agent is not None and app.session.agent.turns[-1].status == "cancelled"
        )


async def test_errors_are_one_sentence_and_the_conversation_is_kept(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(text_reply("First answer."), error(429, "slow down"))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "first")
        await wait_until(pilot, lambda: not app.conversation.running)
        await submit(pilot, "second")
        await wait_until(pilot, lambda: not app.conversation.running)
        shown = log_text(app)
        assert "First answer." in shown
        assert "rate limiting" in shown
        assert app.is_running


async def test_server_down(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = fake_openai.settings(base_url=f"http://127.0.0.1:{port}/v1")
    app = make_app(shop_db, settings)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "anyone there?")
        await wait_until(pilot, lambda: not app.conversation.running)
        assert "cannot reach the model server" in log_text(app)


async def test_slash_commands(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/model")
        assert "model fake-model at http://127.0.0.1" in log_text(app)
        await submit(pilot, "/context")
        await wait_until(pilot, lambda: "Context notes" in log_text(app))
        await submit(pilot, "/nonsense")
        assert any("unknown command /nonsense" in n for n in notifications(app))
        assert app.conversation.question.text == "/nonsense"

        await submit(pilot, "revenue by region?")
        await wait_until(pilot, lambda: not app.conversation.running)
        first_id = app.session.agent.conversation_id  # type: ignore[union-attr]
        await submit(pilot, "/clear")
        assert "Total revenue" not in log_text(app)
        await submit(pilot, "/new")
        assert app.session.agent is not None and app.session.agent.conversation_id != first_id

        await submit(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: "resumed conversation" in log_text(app))
        assert app.session.agent.conversation_id == first_id
        assert "revenue by region?" in log_text(app)
        shown = log_text(app)
        assert "Total revenue was" in shown and "Shown to the person" not in shown, shown
        assert not app.conversation.query_one("#turn-status").display, "no stale status line"

        await submit(pilot, "/help")
        assert type(app.screen).__name__ == "HelpScreen"


async def test_model_text_renders_inert(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("Look: \x1b]52;c;aGk=\x07 and [bold]not markup[/bold]"))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "say something odd")
        await wait_until(pilot, lambda: not app.conversation.running)
        source = app.conversation.log_view.query(StreamingMarkdown).last().source
        assert "\x1b" not in source and "\\x1b]52" in source and "[bold]not markup[/bold]" in source


async def test_auto_scroll_stops_when_scrolled_up_and_resumes_at_the_bottom(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    # Long enough (about 6 s) that the stream is still running after the checks below:
    # the screen keeps up with it, so nothing is left to draw once the stream ends.
    text = "".join(f"Paragraph {i} about orders and regions.\n\n" for i in range(300))
    fake_openai.script(text_reply(text, chunk_size=20, delay_s=0.01))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        log = app.conversation.log_view
        await submit(pilot, "a long answer please")
        await wait_until(pilot, lambda: log.max_scroll_y > 20)
        await wait_until(pilot, lambda: log.scroll_y == log.max_scroll_y)  # follows the stream at first

        log.scroll_home(animate=False)
        await wait_until(pilot, lambda: log.scroll_y == 0)
        grown_from = log.max_scroll_y
        await wait_until(pilot, lambda: log.max_scroll_y > grown_from + 5)
        assert log.scroll_y == 0, "stays where the reader scrolled to"

        log.scroll_end(animate=False)
        await wait_until(pilot, lambda: not app.conversation.running)
        await wait_until(pilot, lambda: log.scroll_y == log.max_scroll_y)  # follows again at the bottom


async def test_the_waiting_notice_goes_when_the_question_starts(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # What the app shows for a question asked while the database still opens.
        app.conversation.show_waiting("waiting for the database and the model client…")
        assert "waiting for the database" in log_text(app)
        await submit(pilot, "revenue by region?")
        await wait_until(pilot, lambda: app.conversation.query(AnswerCard))
        await wait_until(pilot, lambda: not app.conversation.running)
        assert "waiting for the database" not in log_text(app), "the passing notice is gone"


async def test_a_tool_call_is_shown_while_the_model_writes_it(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    """The reply stalls after the call's arguments: the block is there, open, with the SQL."""
    sql = "SELECT region, count(*) AS orders_seen FROM sales.orders GROUP BY region"
    fake_openai.script(stall(tool_call_reply([("run_sql", {"sql": sql})], chunk_size=6), seconds=30))
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "orders per region?")
        await wait_until(pilot, lambda: bool(app.conversation.query(ToolBlock)))
        block = app.conversation.query_one(ToolBlock)
        await wait_until(
            pilot,
            lambda: "orders_seen FROM sales.orders GROUP BY region" in plain(block.query_one(".tool-args")),
        )
        assert block.state == "streaming" and not block.collapsed
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.conversation.running)
        assert block.state == "cancelled" and block.collapsed


async def test_a_plain_text_reply_is_asked_again_in_view(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        text_reply("Probably 7 orders."),
        tool_call_reply([("send_message", {"message": "I need to look at the data first: which year?"})]),
    )
    app = make_app(shop_db, fake_openai.settings(max_reasks=1))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "how many orders?")
        await wait_until(pilot, lambda: not app.conversation.running)
        shown = log_text(app)
        assert "asked it once more to answer with a tool" in shown and "which year?" in shown
        first = app.conversation.log_view.query(StreamingMarkdown).first()
        assert first.source == "Probably 7 orders." and first.has_class("-unverified")


async def test_a_question_asked_before_the_model_client_is_ready_waits_for_it(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    """The question shows at once with a passing notice; it runs when the agent is ready, and
    Esc before then gives it back."""
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    gate = threading.Event()
    build = app.session.prepare_agent

    def gated() -> Any:
        gate.wait(HANG_GUARD_S)
        return build()

    app.session.prepare_agent = gated  # type: ignore[method-assign]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session.catalog is not None)
            await submit(pilot, "first try")
            assert app.conversation.waiting and "waiting for the database" in log_text(app)
            await pilot.press("escape")
            assert app.conversation.question.text == "first try" and "■ cancelled" in log_text(app)
            assert not app.conversation.waiting

            await submit(pilot, "revenue by region?")
            assert app.conversation.waiting and not app.conversation.running
            gate.set()
            await wait_until(pilot, lambda: app.conversation.query(AnswerCard))
            await wait_until(pilot, lambda: not app.conversation.running)
            shown = log_text(app)
            assert "waiting for the database" not in shown and shown.count("revenue by region?") == 1
            assert "Total revenue was" in shown
    finally:
        gate.set()
    fake_openai.assert_script_consumed()
