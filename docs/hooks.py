"""The site's home page is the repository's README.md, its ``docs/`` links made relative to ``docs/``.

README.md links to the pages as ``docs/PAGE.md`` (so the links work on GitHub); on the site the home page lives
in ``docs/``, so ``](docs/`` becomes ``](``. ``docs/index.md`` holds only a pointer here; mkdocs then checks every
link of the result, as it checks every page's.
"""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the home page's text by README.md's, with its ``docs/`` links made relative to ``docs/``."""
    if page.file.src_uri != "index.md":
        return markdown
    return README.read_text(encoding="utf-8").replace("](docs/", "](")
