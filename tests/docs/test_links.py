"""Every relative link of the documentation points to a file that exists, and to a heading in it.

The pages: README.md, SECURITY.md, CONTRIBUTING.md, BENCHMARKS.md, warehouse/README.md and
docs/**/*.md. A link is `[text](target)` outside fenced code; web links (`https:`, `mailto:`)
are left alone. An anchor (`page.md#heading`, `#heading`) must be a heading of that page as
GitHub names it: lower case, punctuation dropped, spaces as `-`, `-1`, `-2` … for repeats.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import ROOT

PAGES = sorted(
    [
        *(ROOT / name for name in ("README.md", "SECURITY.md", "CONTRIBUTING.md", "BENCHMARKS.md")),
        ROOT / "warehouse" / "README.md",
        *(ROOT / "docs").glob("**/*.md"),
    ]
)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```+|~~~+).*?^\1[ \t]*$", re.M | re.S)


def _prose(text: str) -> str:
    """The page without its fenced code: a `# comment` in a shell block is no heading."""
    return FENCE.sub("", text)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in _prose(text).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path, text: str) -> list[str]:
    """The links of `text` (the page at `page`) that point to no file or no heading."""
    broken: list[str] = []
    for target in LINK.findall(_prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in anchors(text):
                broken.append(f"{target}: no such heading in {page.name}")
            continue
        where = (page.parent / path).resolve()
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where.read_text(encoding="utf-8")):
            broken.append(f"{target}: no such heading in {where.name}")
    return broken


def test_every_relative_link_resolves() -> None:
    assert len(PAGES) >= 12, PAGES
    broken = {
        str(page.relative_to(ROOT)): found
        for page in PAGES
        if (found := broken_links(page, page.read_text(encoding="utf-8")))
    }
    assert not broken, broken


def test_the_readme_links_to_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    pages = {str(page.relative_to(ROOT)) for page in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, sorted(pages - linked)


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text(
        "# Other page\n\n## Twice\n\n## Twice\n\n```sh\n# not a heading\n```\n"
    )
    page = tmp_path / "page.md"
    text = (
        "# Page\n\n[ok](other.md#other-page) [repeat](other.md#twice-1) [self](#page) "
        "[web](https://example.com/x#y) [none](#nowhere)\n"
        "[gone](missing.md) [no heading](other.md#not-a-heading) [`code`](other.md#nowhere)\n"
        "```md\n[in a fence](nowhere.md)\n```\n"
    )
    assert broken_links(page, text) == [
        "#nowhere: no such heading in page.md",
        "missing.md: no such file",
        "other.md#not-a-heading: no such heading in other.md",
        "other.md#nowhere: no such heading in other.md",
    ]
