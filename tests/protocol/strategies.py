"""Hypothesis strategies built from the protocol's pydantic models, and the models' inventory.

The strategies read each field's type and constraints (ranges, lengths, patterns, literals,
nested models, discriminated unions) from the models themselves, so a new message or field
is covered without touching the tests.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from protocol.messages import AnyMessage, BotMessage, Event, RefereeMessage

__all__ = [
    "ANY_VALUE",
    "BOT_TYPES",
    "EVENT_KINDS",
    "MESSAGE_MODELS",
    "MESSAGE_TYPES",
    "REFEREE_TYPES",
    "message_maps",
    "union_members",
]

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what msgpack can carry
_TEXT = st.characters(codec="utf-8")  # no lone surrogates: they cannot be encoded
_PATTERN_ALPHABET = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def union_members(union: Any) -> tuple[type[BaseModel], ...]:
    """The models of an ``Annotated[A | B | …, Field(discriminator=…)]`` union."""
    inner = get_args(union)[0] if get_origin(union) is Annotated else union
    return tuple(get_args(inner))


def _literal(model: type[BaseModel], name: str) -> str:
    (value,) = get_args(model.model_fields[name].annotation)
    return str(value)


MESSAGE_MODELS = union_members(AnyMessage)
MESSAGE_TYPES = frozenset(_literal(model, "type") for model in MESSAGE_MODELS)
BOT_TYPES = frozenset(_literal(model, "type") for model in union_members(BotMessage))
REFEREE_TYPES = frozenset(_literal(model, "type") for model in union_members(RefereeMessage))
EVENT_KINDS = frozenset(_literal(model, "event") for model in union_members(Event))

#: Any value msgpack can carry, nested a little.
ANY_VALUE: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(_INT_MIN, _INT_MAX)
    | st.floats()
    | st.text(_TEXT, max_size=8)
    | st.binary(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(_TEXT, max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _bounds(metadata: Sequence[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in metadata:
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern"):
            value = getattr(item, name, None)
            if value is not None:
                found[name] = value
    return found


def _for_type(annotation: Any, metadata: Sequence[Any]) -> st.SearchStrategy[Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extra = get_args(annotation)
        more = list(metadata)
        for item in extra:
            more.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        return _for_type(base, more)
    if origin is Union or origin is types.UnionType:
        return st.one_of(
            [
                st.none() if option is type(None) else _for_type(option, metadata)
                for option in get_args(annotation)
            ]
        )
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return message_maps(annotation)
    bounds = _bounds(metadata)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        low = bounds.get("ge", bounds["gt"] + 1 if "gt" in bounds else _INT_MIN)
        high = bounds.get("le", bounds["lt"] - 1 if "lt" in bounds else _INT_MAX)
        return st.integers(low, high)
    if annotation is str:
        low, high = bounds.get("min_length", 0), bounds.get("max_length", 24)
        if "pattern" in bounds:
            texts = st.from_regex(bounds["pattern"], fullmatch=True, alphabet=_PATTERN_ALPHABET)
            return texts.filter(lambda text: low <= len(text) <= high)
        return st.text(_TEXT, min_size=low, max_size=min(high, 24))
    if origin is list:
        (item,) = get_args(annotation)
        low = bounds.get("min_length", 0)
        high = min(bounds.get("max_length", 4), max(low, 4))
        return st.lists(_for_type(item, []), min_size=low, max_size=high)
    if origin is dict:
        key, value = get_args(annotation)
        return st.dictionaries(_for_type(key, []), _for_type(value, []), max_size=4)
    raise TypeError(f"no strategy for {annotation!r}")  # pragma: no cover - a new field type


def message_maps(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Plain maps that ``model`` accepts: required fields always, defaulted ones sometimes."""
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        strategy = _for_type(info.annotation, info.metadata)
        (required if info.is_required() else optional)[name] = strategy
    return st.fixed_dictionaries(required, optional=optional)
