"""Typed Python callables as model tools, and every way a model can call them wrongly.

A tool is a method marked with `@tool(...)` where it is defined: its signature is the
schema, its docstring the description, and the mark carries what the loop and the
screens need to know about it (whether it is an output tool, how a call of it reads
in one line). `ToolRegistry.collect` gathers the marked methods of a tool group.

Models send malformed JSON, unknown names, missing or mistyped arguments; each of
these must come back to the model as a tool result it can act on, never as an
exception that ends the turn. Arguments that were not a valid JSON object are
never replayed into the history (some servers reject such a history outright).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from astro_tui.data.results import QueryResult
from astro_tui.errors import AstroError, error_line
from astro_tui.text import one_line

F = TypeVar("F", bound=Callable[..., Any])

MAX_CONTENT_CHARS = 12_000
SUMMARY_CHARS = 70

Summarize = Callable[[Mapping[str, Any]], str]
"""A call's arguments (as the model sent them: possibly partial or mistyped) in words."""


class ToolError(AstroError):
    """A failure the model can fix; `str()` is exactly what the model reads."""


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What a tool declares about itself beside its signature."""

    output: bool = False
    """An output tool answers the person; the turn ends when one succeeds."""
    summary: Summarize | None = None


def tool(*, output: bool = False, summary: Summarize | None = None) -> Callable[[F], F]:
    """Mark a function or method as a model tool (see the module docstring)."""

    def mark(func: F) -> F:
        func.__astro_tool__ = ToolFacts(output, summary)  # type: ignore[attr-defined]
        return func

    return mark


def facts_of(func: Callable[..., Any]) -> ToolFacts | None:
    return getattr(func, "__astro_tool__", None)


@dataclass(frozen=True, slots=True)
class ToolReturn:
    """What a tool hands back when it has more than text: a result to show, or an answer."""

    content: str
    value: Any = None
    result: QueryResult | None = None
    result_name: str | None = None
    summary: str | None = None
    shown: str | None = None
    """What the person saw of an output tool's answer, kept with the saved conversation."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    func: Callable[..., Any]
    model: type[BaseModel]
    output: bool
    is_async: bool
    collection_fields: Mapping[str, type] = field(default_factory=dict)
    summarize: Summarize | None = None

    def schema(self) -> dict[str, Any]:
        parameters = _clean_schema(self.model.model_json_schema())
        parameters.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }

    def usage(self) -> str:
        return f"{self.name}({', '.join(self.model.model_fields)})"

    def summary(self, arguments: Mapping[str, Any] | None) -> str:
        """One line saying what a call does, for progress lines: `run_sql  -- revenue by region`."""
        if not arguments or self.summarize is None:
            return ""
        return one_line(self.summarize(arguments), SUMMARY_CHARS)


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A call checked against the registry; `replay_arguments` is safe to put back in history."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    replay_arguments: str
    error: str | None = None
    spec: ToolSpec | None = None

    @property
    def is_output(self) -> bool:
        return self.spec is not None and self.spec.output

    @property
    def summary(self) -> str:
        return self.spec.summary(self.arguments) if self.spec is not None else ""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    ok: bool
    content: str
    elapsed_ms: float
    value: Any = None
    result: QueryResult | None = None
    result_name: str | None = None
    summary: str | None = None
    shown: str | None = None


class ToolRegistry:
    """Tools by name; schemas are computed once since they go into every request."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._schemas: list[dict[str, Any]] | None = None

    def add(
        self, func: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> ToolSpec:
        """One tool; what it declares with `@tool` (nothing, for a plain function) comes along."""
        tool_name = name or func.__name__
        facts = facts_of(func) or ToolFacts()
        model, collections = _arguments_model(func, tool_name)
        spec = ToolSpec(
            name=tool_name,
            description=description or _description(func),
            func=func,
            model=model,
            output=facts.output,
            is_async=inspect.iscoroutinefunction(func),
            collection_fields=collections,
            summarize=facts.summary,
        )
        self._tools[tool_name] = spec
        self._schemas = None
        return spec

    def collect(self, group: object) -> None:
        """Every method of `group` marked with `@tool`, in the order its class defines them."""
        for name, member in vars(type(group)).items():
            if callable(member) and facts_of(member) is not None:
                self.add(getattr(group, name))

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __getitem__(self, name: str) -> ToolSpec:
        return self._tools[name]

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        if self._schemas is None:
            self._schemas = [spec.schema() for spec in self._tools.values()]
        return self._schemas

    def parse(self, call_id: str, name: str, raw: str | None) -> ParsedCall:
        """Decode and validate arguments without running anything."""
        spec = self._tools.get(name)
        text = (raw or "").strip()
        try:
            decoded: Any = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            message = (
                f"the arguments were not valid JSON ({exc.msg} at character {exc.pos}); "
                "send one JSON object with the arguments by name"
            )
            if spec is not None:
                message += f", e.g. {_example(spec)}"
            return ParsedCall(call_id, name, None, "{}", _prefix(name, spec, message), spec)
        if not isinstance(decoded, dict):
            message = f"the arguments must be a JSON object, not {type(decoded).__name__}"
            return ParsedCall(call_id, name, None, "{}", _prefix(name, spec, message), spec)
        replay = json.dumps(decoded, ensure_ascii=False, separators=(",", ":"), default=str)
        if spec is None:
            message = f"unknown tool '{name}'; the tools are: {', '.join(self._tools)}"
            return ParsedCall(call_id, name, decoded, replay, message, None)
        arguments = _coerce_collections(decoded, spec.collection_fields)
        try:
            validated = spec.model.model_validate(arguments)
        except ValidationError as exc:
            return ParsedCall(call_id, name, decoded, replay, _validation_message(spec, exc, decoded), spec)
        values = {key: getattr(validated, key) for key in spec.model.model_fields}
        return ParsedCall(call_id, name, values, replay, None, spec)

    async def invoke(self, call: ParsedCall) -> ToolOutcome:
        """Run a parsed call; any failure becomes an unsuccessful outcome, except cancellation."""
        started = time.perf_counter()
        if call.error is not None or call.spec is None or call.arguments is None:
            return ToolOutcome(False, call.error or "invalid call", _ms(started))
        spec = call.spec
        try:
            if spec.is_async:
                returned = await spec.func(**call.arguments)
            else:
                returned = await asyncio.to_thread(spec.func, **call.arguments)
        except AstroError as exc:
            return ToolOutcome(False, _cap(error_line(exc)), _ms(started))
        except Exception as exc:
            return ToolOutcome(False, f"{spec.name} failed: {error_line(exc, 500)}", _ms(started))
        if isinstance(returned, ToolReturn):
            return ToolOutcome(
                True,
                _cap(returned.content),
                _ms(started),
                returned.value,
                returned.result,
                returned.result_name,
                returned.summary,
                returned.shown,
            )
        return ToolOutcome(True, _cap("" if returned is None else str(returned)), _ms(started), returned)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _cap(text: str) -> str:
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[:MAX_CONTENT_CHARS] + f"\n… (output cut at {MAX_CONTENT_CHARS:,} characters)"


def _prefix(name: str, spec: ToolSpec | None, message: str) -> str:
    return f"{name}: {message}" if spec is not None else f"{message} (tool '{name}')"


def _description(func: Callable[..., Any]) -> str:
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.split()) if doc else func.__name__.replace("_", " ")


def _arguments_model(func: Callable[..., Any], name: str) -> tuple[type[BaseModel], dict[str, type]]:
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    collections: dict[str, type] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
        kind = _collection_kind(annotation)
        if kind is not None:
            collections[param.name] = kind
    config = ConfigDict(extra="ignore", arbitrary_types_allowed=False)
    model = create_model(f"{name}_arguments", __config__=config, **fields)
    return model, collections


def _collection_kind(annotation: Any) -> type | None:
    """`list` or `dict` when the parameter is (only or also) one, for lenient coercion."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    candidates = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    origins = {typing.get_origin(c) or c for c in candidates}
    if dict in origins:
        return dict
    if list in origins and str not in origins:
        return list
    return None


def _is_union(annotation: Any) -> bool:
    import types

    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _coerce_collections(arguments: dict[str, Any], collections: Mapping[str, type]) -> dict[str, Any]:
    """Weak models send `"[\\"a\\"]"` or a bare `"a"` for a list; accept what is unambiguous."""
    if not collections:
        return arguments
    fixed = dict(arguments)
    for key, kind in collections.items():
        value = fixed.get(key)
        if not isinstance(value, str):
            continue
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, kind):
            fixed[key] = decoded
        elif kind is list:
            fixed[key] = [value]
    return fixed


def _validation_message(spec: ToolSpec, exc: ValidationError, given: Mapping[str, Any]) -> str:
    missing: list[str] = []
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in error["loc"])
        if error["type"] == "missing" and len(error["loc"]) == 1:
            missing.append(loc)
        else:
            got = json.dumps(error.get("input"), default=str, ensure_ascii=False)
            if len(got) > 80:
                got = got[:77] + "..."
            problems.append(f"'{loc}': {error['msg']} (got {got})")
    parts = []
    if missing:
        parts.append(
            "missing required argument" + ("s" if len(missing) > 1 else "") + ": " + ", ".join(missing)
        )
    parts.extend(problems[:5])
    unknown = sorted(set(given) - set(spec.model.model_fields))
    if unknown:
        parts.append("unknown argument" + ("s" if len(unknown) > 1 else "") + ": " + ", ".join(unknown))
    return f"{spec.name}: " + "; ".join(parts) + f". Call it as {spec.usage()}."


def _example(spec: ToolSpec) -> str:
    names = list(spec.model.model_fields)[:2]
    return "{" + ", ".join(f'"{n}": ...' for n in names) + "}"


def _clean_schema(schema: Any, *, in_properties: bool = False) -> Any:
    """Drop pydantic's titles: they repeat the names and cost prompt size in every request."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and not in_properties and isinstance(value, str):
                continue
            out[key] = _clean_schema(value, in_properties=key in ("properties", "$defs"))
        return out
    if isinstance(schema, list):
        return [_clean_schema(v) for v in schema]
    return schema
