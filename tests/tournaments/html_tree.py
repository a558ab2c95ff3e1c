"""A page's HTML as a tree of elements, for tests that read the report and other pages."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

# ---------------------------------------------------------------------------------------------
# A small DOM: enough of a tree to count elements inside a section


@dataclass
class Element:
    """One element of a parsed page."""

    tag: str
    attrs: dict[str, str]
    children: list[Element] = field(default_factory=list)
    text: str = ""

    @property
    def classes(self) -> set[str]:
        """The element's classes."""
        return set(self.attrs.get("class", "").split())

    def iter(self) -> Iterator[Element]:
        """This element and every descendant, in document order."""
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str, css_class: str | None = None) -> list[Element]:
        """Descendants (and self) with this tag and, if given, this class."""
        return [
            element
            for element in self.iter()
            if element.tag == tag and (css_class is None or css_class in element.classes)
        ]

    def by_id(self, identifier: str) -> Element:
        """The element with this id; fails the test if there is none."""
        for element in self.iter():
            if element.attrs.get("id") == identifier:
                return element
        raise AssertionError(f"no element with id {identifier!r}")

    def all_text(self) -> str:
        """The text of this element and its descendants."""
        return "".join(element.text for element in self.iter())


_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "wbr",
}


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {key: value or "" for key, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {key: value or "" for key, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text += data


def parse(text: str) -> Element:
    """The page as a tree of elements."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root
