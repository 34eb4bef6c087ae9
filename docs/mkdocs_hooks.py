"""mkdocs hook (mkdocs.yml): a relative link from a page to a repository file outside docs/
(``../examples/x.py``, ``../plugins/opboost-vw``) becomes a link to that file on GitHub, so the
pages link to the same files on GitHub and on the built site."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(\]\()((?:\.\./)+[^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown, page, config, files):
    """Rewrite the page's links that leave docs/ into ``repo_url``/blob (or tree)/main/..."""
    base = posixpath.dirname(page.file.src_uri)
    repo = config["repo_url"].rstrip("/")

    def rewrite(match: re.Match) -> str:
        target = posixpath.normpath(posixpath.join("docs", base, match.group(2)))
        if target.startswith("docs/") or target.startswith(".."):
            return match.group(0)
        kind = "tree" if (ROOT / target).is_dir() else "blob"
        return f"{match.group(1)}{repo}/{kind}/main/{target}{match.group(3) or ''})"

    return LINK.sub(rewrite, markdown)
