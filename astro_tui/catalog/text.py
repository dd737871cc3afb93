"""Words for lexical search: identifiers split, comments tokenised, plurals folded.

Identifiers and prose meet on the same terms: `orderDate`, `order_date` and
"dates of orders" all yield `order` and `date`. The stemmer is deliberately
light (plurals and a few suffixes) because catalog vocabulary is mostly nouns,
and an aggressive stemmer conflates names people keep apart.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")

STOPWORDS = frozenset(
    (
        "a", "about", "above", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
        "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
        "done", "each", "few", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers",
        "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more",
        "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our",
        "ours", "out", "over", "own", "per", "same", "she", "should", "so", "some", "such", "than", "that",
        "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
        "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
        "while", "who", "whom", "whose", "why", "will", "with", "would", "you", "your", "yours", "show",
        "list", "give", "get", "find", "tell", "me", "please", "want", "need", "know", "table", "tables",
        "column", "columns", "data", "database", "field", "fields", "value", "values",
    )
)  # fmt: skip

SYNONYMS: dict[str, tuple[str, ...]] = {
    "revenue": ("sale", "amount", "gmv", "income", "price", "total"),
    "sale": ("revenue", "order"),
    "income": ("revenue",),
    "customer": ("client", "buyer", "user", "member"),
    "client": ("customer",),
    "buyer": ("customer",),
    "product": ("item", "sku", "good", "article"),
    "item": ("product", "line"),
    "order": ("purchase", "transaction"),
    "purchase": ("order",),
    "employee": ("staff", "worker"),
    "staff": ("employee",),
    "region": ("area", "territory", "province", "market"),
    "country": ("nation", "market"),
    "city": ("town",),
    "date": ("day", "time"),
    "day": ("date",),
    "time": ("timestamp", "date"),
    "when": ("date", "time"),
    "cost": ("spend", "expense", "price"),
    "spend": ("cost", "budget"),
    "price": ("amount", "cost"),
    "campaign": ("ad", "advertising", "promotion", "marketing"),
    "ad": ("campaign", "advertising"),
    "session": ("visit",),
    "visit": ("session", "pageview"),
    "email": ("mail",),
    "mail": ("email",),
    "phone": ("telephone", "mobile"),
    "refund": ("return",),
    "return": ("refund",),
    "job": ("task", "dag", "pipeline", "run"),
    "pipeline": ("dag", "job"),
    "task": ("job",),
    "fail": ("failure", "error", "failed"),
    "failure": ("fail", "error"),
    "error": ("failure", "fail"),
    "user": ("customer", "account", "member"),
    "discount": ("coupon", "promotion"),
    "shipment": ("delivery", "shipping"),
    "delivery": ("shipment", "shipping"),
    "store": ("shop", "storefront"),
    "shop": ("store", "storefront"),
    "count": ("number", "quantity"),
    "quantity": ("count", "unit"),
    "money": ("amount", "revenue", "price"),
    "category": ("type", "class", "group"),
    "stock": ("inventory",),
    "inventory": ("stock",),
}


def identifier_words(name: str) -> list[str]:
    """`orderDate_v2` -> ['order', 'date', 'v', '2']; CJK runs become characters and pairs."""
    words: list[str] = []
    for chunk in _WORD.findall(name):
        for part in _CAMEL.findall(chunk):
            words.extend(_cjk_split(part.lower()))
    return words


def _cjk_split(word: str) -> list[str]:
    if not _CJK.search(word):
        return [word]
    chars = list(word)
    return chars + [a + b for a, b in itertools.pairwise(chars)]


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + replacement
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Stemmed words of a name or of prose, stopwords kept (callers decide)."""
    return [stem(w) for w in identifier_words(text)]


def query_terms(text: str) -> list[str]:
    """Stemmed, stopword-free words of a question, in order."""
    return [stem(w) for w in identifier_words(text) if w not in STOPWORDS]


def compound(words: list[str]) -> str | None:
    """`order_items` is also searchable as `orderitems`, which people type."""
    if len(words) < 2:
        return None
    return stem("".join(words))
