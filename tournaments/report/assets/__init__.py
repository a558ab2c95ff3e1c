"""The CSS, JavaScript and HTML of the report and of the replay pages, as files that linters
and browsers can read; each page inlines them whole (its Content-Security-Policy names their
hashes), so a page stays one self-contained file."""

from __future__ import annotations

import base64
import hashlib
from importlib import resources

__all__ = ["asset_text", "inline_hash"]


def asset_text(name: str) -> str:
    """The text of the asset file ``name`` (``report.css``) of this package."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def inline_hash(text: str) -> str:
    """The CSP source that allows an inline element of this text: ``'sha256-…'``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
