"""Which tables and columns a question is about: BM25 over names, comments and notes.

Two small BM25 indexes, built once: one document per table (its name weighted
most, then comment, schema and context notes), one per distinct column
(name + comment, shared by every table that has the same column). A table's
score is its own plus a share of its best columns, so "customer email" finds
`customers` through the `email` column. Query words are stemmed, expanded with
a few synonyms, prefixes and concatenations, and typos are caught by fuzzy
matching against the vocabulary (thousands of words), never against documents.
Postings are numpy arrays with BM25 weights precomputed, so a query costs a few
array additions even at 10,000 tables.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rapidfuzz import fuzz, process

from astro_tui.catalog.text import SYNONYMS, compound, identifier_words, query_terms, stem, terms
from astro_tui.catalog.values import ValueScanner
from astro_tui.catalog.vfs import display_name, table_path
from astro_tui.data.catalog_model import Catalog, Table

if TYPE_CHECKING:
    from astro_tui.data.database import CancelToken, Database

_K1 = 1.2
_B = 0.5
_TABLE_FIELDS = {"name": 3.0, "comment": 1.5, "schema": 0.75, "notes": 1.0, "columns": 0.15}
_COLUMN_FIELDS = {"name": 3.0, "comment": 1.5}
_BEST_COLUMN_SHARE = 0.7
_OTHER_COLUMNS_SHARE = 0.15
_SYNONYM_WEIGHT = 0.45
_PREFIX_WEIGHT = 0.5
_FUZZY_CUTOFF = 80.0
_EMBEDDING_SHARE = 0.5

Embedder = Callable[[list[str]], list[list[float]]]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A ranked table; `column` is its best-matching column when one contributed."""

    table: Table
    column: str | None
    score: float
    why: str


class _Postings:
    """Term id -> (document ids, BM25 weights), as one CSR pair of arrays."""

    def __init__(self, docs: list[int], term_ids: list[int], weights: list[float], n_docs: int, n_terms: int):
        doc_arr = np.asarray(docs, dtype=np.int64)
        term_arr = np.asarray(term_ids, dtype=np.int64)
        tf_arr = np.asarray(weights, dtype=np.float64)
        key = term_arr * max(n_docs, 1) + doc_arr
        unique, inverse = np.unique(key, return_inverse=True)
        tf = np.bincount(inverse, weights=tf_arr, minlength=len(unique)) if len(unique) else tf_arr[:0]
        term_u = unique // max(n_docs, 1)
        doc_u = unique % max(n_docs, 1)
        length = np.bincount(doc_u, weights=tf, minlength=n_docs) if n_docs else np.zeros(0)
        self.n_docs = n_docs
        self._doc_length = length
        self._avg = float(length.mean()) if n_docs else 1.0
        self._term_u, self._doc_u, self._tf = term_u, doc_u, tf
        self.offsets = (
            np.searchsorted(term_u, np.arange(n_terms + 1)) if n_terms else np.zeros(1, dtype=np.int64)
        )
        self.docs = doc_u

    def finish(self, doc_frequency: np.ndarray, population: float) -> None:
        """BM25 weight per posting; `doc_frequency` per term may count shared documents many times."""
        df = doc_frequency[self._term_u]
        idf = np.log1p((population - df + 0.5) / (df + 0.5))
        norm = _K1 * (1 - _B + _B * self._doc_length[self._doc_u] / max(self._avg, 1e-9))
        self.weights = idf * self._tf * (_K1 + 1) / (self._tf + norm)
        del self._term_u, self._tf

    def df(self, n_terms: int) -> np.ndarray:
        return np.diff(self.offsets).astype(np.float64) if n_terms else np.zeros(0)

    def add(self, scores: np.ndarray, term: int, weight: float) -> None:
        lo, hi = self.offsets[term], self.offsets[term + 1]
        if hi > lo:
            scores[self.docs[lo:hi]] += weight * self.weights[lo:hi]


class MetadataIndex:
    """The lexical index over one catalog; build once, search many times.

    `embedder` (texts -> vectors, e.g. the model server's embeddings endpoint) is an
    optional extra signal blended into the lexical score; search never needs it.
    """

    def __init__(
        self, catalog: Catalog, *, context_notes: str = "", embedder: Embedder | None = None
    ) -> None:
        self.catalog = catalog
        self.tables: list[Table] = catalog.tables
        self.embedder = embedder
        self._vocab: dict[str, int] = {}
        self._memo: dict[str, list[int]] = {}
        notes = _notes_by_table(catalog, context_notes)
        self._notes = notes
        self._values: ValueScanner | None = None
        self._table_vectors: np.ndarray | None = None
        self._build(notes)

    def values(self) -> ValueScanner:
        """The keyword-in-values scanner for this catalog, with its scan order kept between calls."""
        if self._values is None:
            self._values = ValueScanner(self.catalog)
        return self._values

    def _ids(self, text: str) -> list[int]:
        """Term ids of a name or comment, with the concatenated form of multi-word names."""
        found = self._memo.get(text)
        if found is None:
            words = terms(text)
            joined = compound(identifier_words(text)) if len(text) < 64 else None
            if joined and joined not in words:
                words.append(joined)
            vocab = self._vocab
            found = self._memo[text] = [vocab.setdefault(w, len(vocab)) for w in words]
        return found

    def _build(self, notes: dict[int, str]) -> None:
        t_docs: list[int] = []
        t_terms: list[int] = []
        t_weights: list[float] = []
        signatures: dict[tuple[str, str | None], int] = {}
        s_docs: list[int] = []
        s_terms: list[int] = []
        s_weights: list[float] = []
        occ_sig: list[int] = []
        occ_offsets = [0]
        column_names: list[str] = []
        for t, table in enumerate(self.tables):
            fields: list[tuple[list[int], float]] = [
                (self._ids(table.name), _TABLE_FIELDS["name"]),
                (self._ids(table.schema), _TABLE_FIELDS["schema"]),
            ]
            if table.comment:
                fields.append((self._ids(table.comment), _TABLE_FIELDS["comment"]))
            if t in notes:
                fields.append((self._ids(notes[t]), _TABLE_FIELDS["notes"]))
            for column in table.columns:
                key = (column.name, column.comment)
                sig = signatures.get(key)
                if sig is None:
                    sig = signatures[key] = len(signatures)
                    name_ids = self._ids(column.name)
                    s_terms.extend(name_ids)
                    s_weights.extend([_COLUMN_FIELDS["name"]] * len(name_ids))
                    if column.comment:
                        comment_ids = self._ids(column.comment)
                        s_terms.extend(comment_ids)
                        s_weights.extend([_COLUMN_FIELDS["comment"]] * len(comment_ids))
                    s_docs.extend([sig] * (len(s_terms) - len(s_docs)))
                    column_names.append(column.name)
                occ_sig.append(sig)
                fields.append((self._ids(column.name), _TABLE_FIELDS["columns"]))
            for ids, weight in fields:
                t_terms.extend(ids)
                t_weights.extend([weight] * len(ids))
            t_docs.extend([t] * (len(t_terms) - len(t_docs)))
            occ_offsets.append(len(occ_sig))
        n_terms = len(self._vocab)
        self._table_postings = _Postings(t_docs, t_terms, t_weights, len(self.tables), n_terms)
        self._table_postings.finish(self._table_postings.df(n_terms), float(len(self.tables)))
        self._column_postings = _Postings(s_docs, s_terms, s_weights, len(signatures), n_terms)
        self.occ_sig = np.asarray(occ_sig, dtype=np.int64)
        self.occ_offsets = np.asarray(occ_offsets, dtype=np.int64)
        sig_occurrences = np.bincount(self.occ_sig, minlength=len(signatures)).astype(np.float64)
        col_df = self._column_df(sig_occurrences, n_terms)
        self._column_postings.finish(col_df, float(max(len(occ_sig), 1)))
        self._signature_names = column_names
        self._words = sorted(self._vocab)
        self._nonempty = np.nonzero(np.diff(self.occ_offsets) > 0)[0]

    def _column_df(self, sig_occurrences: np.ndarray, n_terms: int) -> np.ndarray:
        """Document frequency counted over column occurrences, so `id` everywhere is common."""
        postings = self._column_postings
        counts = np.diff(postings.offsets)
        term_of_posting = np.repeat(np.arange(n_terms), counts)
        return np.bincount(term_of_posting, weights=sig_occurrences[postings.docs], minlength=n_terms)

    def expand(self, query: str) -> list[tuple[int, float, str]]:
        """(term id, weight, the query word it came from) for the words of one query."""
        words = query_terms(query)
        vocab = self._vocab
        found: dict[int, tuple[float, str]] = {}

        def put(word: str, weight: float, origin: str) -> None:
            term = vocab.get(word)
            if term is not None and weight > found.get(term, (0.0, ""))[0]:
                found[term] = (weight, origin)

        for i, word in enumerate(words):
            put(word, 1.0, word)
            for synonym in SYNONYMS.get(word, ()):
                put(stem(synonym), _SYNONYM_WEIGHT, word)
            if i + 1 < len(words):
                put(stem(word + words[i + 1]), 0.8, word)
            if len(word) >= 3:
                start = bisect.bisect_left(self._words, word)
                for candidate in self._words[start : start + 12]:
                    if not candidate.startswith(word):
                        break
                    if candidate != word:
                        put(candidate, _PREFIX_WEIGHT, word)
            if word not in vocab and len(word) >= 4:
                for candidate, score, _ in process.extract(
                    word, self._words, scorer=fuzz.ratio, score_cutoff=_FUZZY_CUTOFF, limit=4
                ):
                    put(candidate, 0.9 * (score / 100) ** 2, word)
        return [(term, weight, origin) for term, (weight, origin) in found.items()]

    def _score(self, query: str) -> tuple[np.ndarray, np.ndarray, list[tuple[int, float, str]]]:
        expanded = self.expand(query)
        table_scores = np.zeros(len(self.tables))
        sig_scores = np.zeros(self._column_postings.n_docs)
        for term, weight, _ in expanded:
            self._table_postings.add(table_scores, term, weight)
            self._column_postings.add(sig_scores, term, weight)
        return table_scores, sig_scores, expanded

    def search(self, queries: list[str], *, limit: int = 10) -> list[SearchHit]:
        """Tables ranked for all queries together (each query counts equally), best first."""
        total = np.zeros(len(self.tables))
        per_query: list[tuple[np.ndarray, list[tuple[int, float, str]]]] = []
        for query in queries:
            if not query.strip():
                continue
            table_scores, sig_scores, expanded = self._score(query)
            combined = table_scores.copy()
            if len(self.occ_sig) and len(self._nonempty):
                occ = sig_scores[self.occ_sig]
                starts = self.occ_offsets[self._nonempty]
                best = np.maximum.reduceat(occ, starts)
                summed = np.add.reduceat(occ, starts)
                combined[self._nonempty] += _BEST_COLUMN_SHARE * best + _OTHER_COLUMNS_SHARE * (summed - best)
            top = combined.max() if len(combined) else 0.0
            if top > 0:
                total += combined / top
            similarity = self._similarity(query)
            if similarity is not None:
                total += _EMBEDDING_SHARE * similarity
            per_query.append((sig_scores, expanded))
        if not len(total) or total.max() <= 0:
            return []
        k = min(limit, int((total > 0).sum()))
        order = np.argpartition(-total, k - 1)[:k]
        order = order[np.lexsort((order, -total[order]))]
        return [self._hit(int(t), float(total[t]), per_query) for t in order]

    def _similarity(self, query: str) -> np.ndarray | None:
        """Cosine similarity of the query to every table, when an embedder was given; never required.

        Any failure of the embedder (no endpoint, wrong shape) switches it off for
        this index, so search falls back to the lexical ranking alone.
        """
        if self.embedder is None:
            return None
        try:
            if self._table_vectors is None:
                texts = [_table_text(t) for t in self.tables]
                rows = [v for i in range(0, len(texts), 256) for v in self.embedder(texts[i : i + 256])]
                self._table_vectors = _unit(np.asarray(rows, dtype=np.float64))
            query_vector = _unit(np.asarray(self.embedder([query]), dtype=np.float64))[0]
            return np.clip(self._table_vectors @ query_vector, 0.0, None)
        except Exception:
            self.embedder = None
            return None

    def _hit(
        self, t: int, score: float, per_query: list[tuple[np.ndarray, list[tuple[int, float, str]]]]
    ) -> SearchHit:
        table = self.tables[t]
        lo, hi = int(self.occ_offsets[t]), int(self.occ_offsets[t + 1])
        best_column, best_score = None, 0.0
        column_scores: dict[str, float] = {}
        for sig_scores, _ in per_query:
            for o in range(lo, hi):
                s = float(sig_scores[self.occ_sig[o]])
                if s > 0:
                    name = table.columns[o - lo].name
                    column_scores[name] = column_scores.get(name, 0.0) + s
        if column_scores:
            best_column, best_score = max(column_scores.items(), key=lambda kv: kv[1])
        words = {origin for _, expanded in per_query for _, _, origin in expanded}
        why = self._why(t, table, words, column_scores)
        return SearchHit(table, best_column if best_score > 0 else None, score, why)

    def _why(self, t: int, table: Table, words: set[str], column_scores: dict[str, float]) -> str:
        reasons = []
        name_hits = _overlap(words, terms(table.name))
        if name_hits:
            reasons.append("name: " + ", ".join(name_hits))
        comment_hits = _overlap(words, terms(table.comment or ""))
        if comment_hits:
            reasons.append("comment: " + ", ".join(comment_hits))
        if t in self._notes and _overlap(words, terms(self._notes[t])):
            reasons.append("context notes")
        top = sorted(column_scores.items(), key=lambda kv: -kv[1])[:3]
        if top:
            reasons.append("columns: " + ", ".join(name for name, _ in top))
        return "; ".join(reasons) or "related words"


def _table_text(table: Table) -> str:
    columns = ", ".join(c.name for c in table.columns[:40])
    return f"{display_name(table)}: {table.comment or ''} Columns: {columns}"


def _unit(matrix: np.ndarray) -> np.ndarray:
    if matrix.ndim != 2:
        raise ValueError("embeddings must be a list of vectors")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _overlap(words: set[str], found: Iterable[str]) -> list[str]:
    found_set = set(found)
    hits = [w for w in sorted(words) if w in found_set]
    if not hits:
        long = [f for f in found_set if len(f) > 2]
        hits = [w for w in sorted(words) if any(f.startswith(w) or w.startswith(f) for f in long)]
    return hits


def _notes_by_table(catalog: Catalog, notes: str) -> dict[int, str]:
    """Lines of the context notes that name a table (`orders` or `sales.orders`), per table index."""
    if not notes.strip():
        return {}
    names: dict[str, list[int]] = {}
    for i, table in enumerate(catalog.tables):
        names.setdefault(table.name.lower(), []).append(i)
        names.setdefault(f"{table.schema}.{table.name}".lower(), []).append(i)
    attached: dict[int, list[str]] = {}
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*[-*#])", notes):
        mentioned: set[int] = set()
        for token in re.findall(r"[\w.]+", paragraph.lower()):
            for candidate in (token, token.rsplit(".", 1)[-1]):
                for i in names.get(candidate, ()):
                    mentioned.add(i)
        for i in mentioned:
            attached.setdefault(i, []).append(paragraph.strip())
    return {i: " ".join(parts) for i, parts in attached.items()}


def format_hits(hits: list[SearchHit], queries: list[str]) -> list[str]:
    quoted = " | ".join(f'"{q}"' for q in queries if q.strip())
    if not hits:
        return [f"no table or column matches {quoted} (try other words, or grep -ri WORD /)"]
    lines = [f"tables and columns for {quoted}, best first:"]
    for rank, hit in enumerate(hits, 1):
        table = hit.table
        size = table.kind
        if table.row_count is not None and table.kind == "table":
            size += f", {table.row_count:,} rows"
        lines.append(f"{rank:2}. {display_name(table)}  {table_path(table)}  ({size})")
        if table.comment:
            comment = " ".join(table.comment.split())
            lines.append("    " + (comment if len(comment) <= 120 else comment[:119] + "…"))
        if hit.column:
            column = table.column(hit.column)
            detail = f" {column.type}" if column else ""
            if column and column.comment:
                detail += " — " + " ".join(column.comment.split())[:100]
            lines.append(f"    best column: {hit.column}{detail}")
        lines.append(f"    matched {hit.why}")
    return lines


def search_metadata(
    index: MetadataIndex,
    db: Database | None,
    queries: list[str],
    keywords: list[str] | None = None,
    *,
    time_budget_s: float = 2.0,
    cancel: CancelToken | None = None,
) -> str:
    """What the model (and a person) sees: ranked tables and columns, then where keyword values live.

    `cancel` stops the value search's queries (which then raises QueryCancelled).
    """
    lines: list[str] = []
    queries = [q for q in queries if q.strip()]
    if queries:
        lines += format_hits(index.search(queries, limit=10), queries)
    words = [k for k in (keywords or []) if k.strip()]
    if words:
        if lines:
            lines.append("")
        lines += index.values().find(db, words, time_budget_s=time_budget_s, cancel=cancel)
    if not lines:
        return "nothing to search: give queries (words) or keywords (values)"
    return "\n".join(lines)
