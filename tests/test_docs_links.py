"""The documentation holds together: every relative link in README.md and docs/*.md
reaches a file that exists (and a heading there, when the link names one), and the front
page stays short and names the two commands a newcomer needs."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_LIMIT = 16_000

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose(text: str) -> str:
    """The text a reader sees as prose: code blocks and inline code removed."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Targets of the markdown links in `text`, outside code."""
    return LINK.findall(prose(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` that reaches no file, or no heading in that file."""
    problems = []
    for target in links(page.read_text(encoding="utf-8")):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not dest.exists():
            problems.append(f"{target}: no such file {dest}")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest.read_text()):
            problems.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert not broken_links(page), f"{page.relative_to(REPO)}: {broken_links(page)}"


def test_the_front_page_is_short_and_names_the_two_commands() -> None:
    readme = (REPO / "README.md").read_bytes()
    assert len(readme) < README_LIMIT, f"README.md is {len(readme):,} bytes"
    text = readme.decode("utf-8")
    assert "make demo" in text and "make test" in text


def test_the_checker_finds_links_outside_code_only() -> None:
    text = "see [a](a.md) and [b](b.md#x)\n```\n[c](c.md)\n```\n`[d](d.md)` ![e](e.png)\n"
    assert links(text) == ["a.md", "b.md#x", "e.png"]


def test_anchors_follow_githubs_rules() -> None:
    text = "# Title\n## `[protocol.score]`\n## Very large runs: the aggregate mode\n## Title\n"
    assert anchors(text) == {
        "title",
        "protocolscore",
        "very-large-runs-the-aggregate-mode",
        "title-1",
    }


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Here\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#here) [gone](missing.md) [bad](there.md#nowhere) [web](https://x.org)",
        encoding="utf-8",
    )
    problems = broken_links(page)
    assert len(problems) == 2
    assert problems[0].startswith("missing.md") and problems[1].startswith("there.md#nowhere")
