"""The CSS, JavaScript and HTML of the report and of the replay pages, as files that linters
and browsers can read; each page inlines them whole (its Content-Security-Policy names their
hashes), so a page stays one self-contained file."""

from __future__ import annotations

from importlib import resources

__all__ = ["asset_text"]


def asset_text(name: str) -> str:
    """The text of the asset file ``name`` (``report.css``) of this package."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
