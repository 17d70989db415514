"""Base classes: strict for what we send, lenient for what we receive."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from runner.models.problems import describe_validation_error

__all__ = [
    "ApiModel",
    "RequestModel",
    "describe_validation_error",
    "empty_dict",
    "empty_list",
    "shared_empty_dict",
    "shared_empty_list",
]

# A resource's validator is built when it is first used, not when its module is imported: the API
# has ~60 models and a run uses a few (a local one-check run: the session and the check
# definitions).


class ApiModel(BaseModel):
    """A resource as the service returns it: unknown fields and enum values are kept, never fatal."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class RequestModel(BaseModel):
    """A body we send: every limit of the API document is checked before it leaves the machine."""

    # Not deferred: FastAPI wraps a body model in its own Annotated field, and a model still to be
    # built there is built with that field's alias (pydantic's UnsupportedFieldAttributeWarning).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    def to_body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# --- one set of given field names for many values ----------------------------------------------------

SHARED_LIMIT = 512  # distinct sets kept: a hostile answer's made-up extra fields cannot grow it further


class SharedFieldsSet(set[str]):
    """The set of given fields of many model values that have the same one (pydantic keeps a set per
    instance: 728 B for 5-16 names, so 10,000 checks' definitions or a session's 10,000 rows carry
    7 MiB of identical sets each). Never changed in place: a copy (model_copy) is a plain set of its
    own, and setting a field that is not in it raises rather than change every value that shares it."""

    def add(self, name: str) -> None:
        if name not in self:
            raise TypeError(f"a shared set of given fields cannot take {name!r}: copy the model instead")

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)


_SHARED: dict[frozenset[str], SharedFieldsSet] = {}
# Values that are never models: a deep walk does not look into them (nor ask isinstance of each).
_LEAVES = frozenset({str, int, float, bool, type(None)})


def share_parts(model: BaseModel, deep: bool = False, empties: tuple[str, ...] = ()) -> None:
    """For values held by the thousand and not changed in place (a session's rows, check definitions,
    judged outcomes): gives `model` (with `deep`, the models in its fields and lists too) the shared
    set equal to its set of given fields, the shared empty map of extras when it has none (a `{}` of
    its own is 64 B), and to each field named in `empties` that is empty the shared empty list or
    map (shared_empty_list). Named, not found by a walk of every field: a row is read 10,000 times
    a read, and its defaults are shared already."""
    own = model.__pydantic_fields_set__
    if type(own) is set:
        key = frozenset(own)
        shared = _SHARED.get(key)
        if shared is None and len(_SHARED) < SHARED_LIMIT:
            shared = _SHARED.setdefault(key, SharedFieldsSet(key))
        if shared is not None:
            object.__setattr__(model, "__pydantic_fields_set__", shared)
    extra = model.__pydantic_extra__
    if type(extra) is dict and not extra:
        object.__setattr__(model, "__pydantic_extra__", _EMPTY_DICT)
    if empties:
        values = model.__dict__
        for name in empties:
            value = values.get(name)  # model_construct may leave a field out
            if value is not None and not value:  # an existing key: the dict does not change size
                values[name] = _EMPTY_DICT if isinstance(value, dict) else _EMPTY_LIST
    if deep:
        for value in model.__dict__.values():
            kind = type(value)
            if kind in _LEAVES:
                continue
            if kind is list:
                for item in value:
                    if type(item) not in _LEAVES and isinstance(item, BaseModel):
                        share_parts(item, deep=True)
            elif isinstance(value, BaseModel):
                share_parts(value, deep=True)


# The modules of models that a run builds (the resources, sessions, check definitions, spec, outcome)
# write real annotations, without `from __future__ import annotations`: pydantic compiles each
# string annotation (typing.ForwardRef) when it creates a model class, ~600 compilations in a
# one-check run (~2% of its start-up); real ones it reads as they are. A name defined further down
# is quoted where it is used.


# A field that starts empty: `Field(default_factory=empty_list)`, not `default_factory=list`. When a
# validator is built, pydantic reads its default factory's signature, and a builtin's is parsed from
# its text (inspect tokenizes it: compiling tokenize's patterns alone was ~1% of a one-check run's
# start-up); a function's is read directly. The value is the same fresh `[]` or `{}`.
#
# `shared_empty_list` (and `shared_empty_dict`): for the values held by the thousand while a run
# lasts, and never changed in place (world checks, check definitions, session rows). One shared
# empty list that refuses to change, not a fresh one per value: a world check, its definition and
# its request had eight, 0.5 KiB a check. Such a field is given a list of its own by assignment or a
# copy; changing the default in place raises rather than change every value that shares it.

_FROZEN = "a field's shared empty default cannot change in place: assign a new value instead"


class _EmptyList(list[Any]):
    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_FROZEN)

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:  # a copy is its holder's own to change (model_copy's update)
        return []

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return []

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, ())


class _EmptyDict(dict[str, Any]):
    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_FROZEN)

    __setitem__ = __delitem__ = __ior__ = setdefault = update = pop = popitem = clear = _refuse

    def __copy__(self) -> dict[str, Any]:
        return {}

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, ())


_EMPTY_LIST = _EmptyList()
_EMPTY_DICT = _EmptyDict()


def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[str, Any]:
    return {}


def shared_empty_list() -> list[Any]:
    return _EMPTY_LIST


def shared_empty_dict() -> dict[str, Any]:
    return _EMPTY_DICT
