"""Caches for work moto repeats on every request although its answer depends only on what it caches by.

Used by the dev moto server (and only there). Each cache is a context manager that swaps one moto function
for a memoizing one and puts the original back on exit; answers are the original's, computed once:

- `cached_lookups`: the list of moto's service modules (a directory scan) and the handler methods of a
  response class (inspect.getmembers), about 1.6 ms of a PutItem's 3.7 ms here.
- `cached_expressions`: the parse of an UpdateExpression (moto parses it twice per UpdateItem and once more
  per Update in a transaction) and the lexing of a ConditionExpression, both pure functions of the string.
  moto's validator deep-copies the parsed tree before it resolves names and values into it, so a cached
  tree is never changed; the copy itself is made from the tree's pickle, several times faster than
  copy.deepcopy of the same tree. Of the ten checks moto's validator then runs over the copy, three
  depend only on the tree, the attribute names and the table's key (one clause of each kind, no
  overlapping paths, no key attribute updated) and change nothing: once they passed for a combination,
  they are not run for it again.
- `cached_attribute_keys`: the keys moto's response serializer tries, for each member of each shape, when
  it reads a value from a plain dict; for a dict they depend only on the member's shape and name.

Together they take about a third off UpdateItem and TransactWriteItems (bench/local_stack.py prints the
CPU the stack's moto spends per job).
"""

from __future__ import annotations

import copy
import pickle
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from moto import backends as moto_backends
from moto.core import responses as moto_responses
from moto.core import serialize as moto_serialize
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing import expressions as moto_expressions
from moto.dynamodb.parsing import validators as moto_validators

_METHOD_LISTING = "method_names_from_class"
_DEEPCOPY = "deepcopy"  # the validators module's own name for copy.deepcopy
# moto leaves these untyped; Any keeps mypy from guessing.
UpdateExpressionParser: Any = getattr(moto_expressions, "UpdateExpressionParser")  # noqa: B009
# The validator's checks that read only the tree, the attribute names and the table's key, and return
# every node unchanged.
_PURE_CHECKS = (
    moto_validators.ActionCountValidator,
    moto_validators.OverlappingPathsValidator,
    moto_validators.UpdateHashRangeKeyValidator,
)
# Distinct expressions a Hookline stack sends number in the tens; the bound only guards a client that
# builds expressions from data.
MAX_ENTRIES = 1024


class _Memo:
    """A bounded memo: past MAX_ENTRIES entries it starts over rather than grow."""

    def __init__(self) -> None:
        self.entries: dict[Any, Any] = {}

    def get_or_make(self, key: Any, make: Callable[[], Any]) -> Any:
        """Returns the entry for key, making and keeping it on a miss."""
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= MAX_ENTRIES:
                self.entries.clear()
            entry = self.entries[key] = make()
        return entry


@contextmanager
def _swapped(*replacements: tuple[object, str, object]) -> Iterator[None]:
    """Sets each (owner, attribute, value) within it and puts every original back on exit (an attribute
    the owner only inherited is removed again)."""
    originals = [(owner, name, vars(owner).get(name, _ABSENT)) for owner, name, _ in replacements]
    for owner, name, value in replacements:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in originals:
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


_ABSENT = object()


@contextmanager
def cached_lookups() -> Iterator[None]:
    """Within it, moto's per-request module scan and method listing answer from a cache."""
    module_names = tuple(moto_backends.list_of_moto_modules())
    methods_by_class: dict[object, list[str]] = {}
    # moto.core.responses imports the function by name; replace it where it is called from.
    original_methods = getattr(moto_responses, _METHOD_LISTING)

    def list_of_moto_modules() -> tuple[str, ...]:
        return module_names

    def method_names_from_class(clazz: object) -> list[str]:
        if clazz not in methods_by_class:
            methods_by_class[clazz] = original_methods(clazz)
        return methods_by_class[clazz]

    with _swapped(
        (moto_backends, "list_of_moto_modules", list_of_moto_modules),
        (moto_responses, _METHOD_LISTING, method_names_from_class),
    ):
        yield


_CheckKey = tuple[int, tuple[tuple[str, str], ...], tuple[str, ...]]


class _UpdateTrees:
    """Parsed UpdateExpressions by expression, each with its pickle, and the pure checks they passed."""

    def __init__(self) -> None:
        self.trees = _Memo()  # expression -> (tree, its pickle)
        self.pickles: dict[int, tuple[Any, bytes]] = {}  # id(tree) -> (tree, its pickle)
        self.passed: set[_CheckKey] = set()
        self.make_original = UpdateExpressionParser.__dict__["make"].__func__
        validator = moto_validators.UpdateExpressionValidator
        self.init_original, self.validate_original = validator.__init__, validator.validate

    def _parse(self, expression: str) -> tuple[Any, bytes]:
        tree = self.make_original(UpdateExpressionParser, expression)  # raises on a bad expression
        if len(self.pickles) >= MAX_ENTRIES:
            # All three start over together: `passed` is keyed by id(tree), and a tree no longer held
            # here could be freed and its id reused by another expression's tree.
            self.pickles.clear()
            self.trees.entries.clear()
            self.passed.clear()
        self.pickles[id(tree)] = (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL))
        return self.pickles[id(tree)]

    def make(self, cls: type[Any], expression: str) -> Any:
        """UpdateExpressionParser.make, answered from the cache."""
        if cls is not UpdateExpressionParser:
            return self.make_original(cls, expression)
        return self.trees.get_or_make(expression, lambda: self._parse(expression))[0]

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        """The validators' deepcopy: a cached tree is copied by unpickling its pickle."""
        cached = self.pickles.get(id(value))
        if cached is not None and cached[0] is value:
            return pickle.loads(cached[1])  # our own pickle, made in this process
        return copy.deepcopy(value, memo)

    def check_key(self, tree: Any, names: dict[str, str] | None, table: Any) -> _CheckKey | None:
        """Identifies what the pure checks depend on; None for a tree not from the cache."""
        cached = self.pickles.get(id(tree))
        if cached is None or cached[0] is not tree:
            return None
        return id(tree), tuple(sorted((names or {}).items())), tuple(table.table_key_attrs)

    def validator_init(self, validator: Any, *args: Any, **kwargs: Any) -> None:
        """UpdateExpressionValidator.__init__, leaving out the pure checks already passed."""
        self.init_original(validator, *args, **kwargs)
        tree = args[0] if args else kwargs["expression"]
        key = self.check_key(tree, validator.expression_attribute_names, validator.table)
        if key in self.passed:
            validator.processors = [p for p in validator.processors if type(p) not in _PURE_CHECKS]
        else:
            validator.hookline_check_key = key

    def validate(self, validator: Any) -> Any:
        """UpdateExpressionValidator.validate, remembering a combination whose checks all passed."""
        result = self.validate_original(validator)  # raises when a check fails: nothing is remembered
        key = getattr(validator, "hookline_check_key", None)
        if key is not None and key[0] in self.pickles:
            if len(self.passed) >= MAX_ENTRIES:
                self.passed.clear()
            self.passed.add(key)
        return result


@contextmanager
def cached_expressions() -> Iterator[None]:
    """Within it, UpdateExpression parses and ConditionExpression lexing answer from a cache."""
    trees = _UpdateTrees()
    lexed = _Memo()  # expression -> tuple of lexed nodes (immutable named tuples)
    lex_original = ConditionExpressionParser._lex_condition_expression

    def lex(parser: ConditionExpressionParser) -> deque[Any]:
        return deque(lexed.get_or_make(parser.condition_expression, lambda: tuple(lex_original(parser))))

    def make(cls: type[Any], expression_str: str) -> Any:
        return trees.make(cls, expression_str)

    def validator_init(validator: Any, *args: Any, **kwargs: Any) -> None:
        trees.validator_init(validator, *args, **kwargs)

    def validate(validator: Any) -> Any:
        return trees.validate(validator)

    validator_class = moto_validators.UpdateExpressionValidator
    with _swapped(
        (UpdateExpressionParser, "make", classmethod(make)),
        (moto_validators, _DEEPCOPY, trees.deepcopy),
        (validator_class, "__init__", validator_init),
        (validator_class, "validate", validate),
        (ConditionExpressionParser, "_lex_condition_expression", lex),
    ):
        yield


@contextmanager
def cached_attribute_keys() -> Iterator[None]:
    """Within it, the serializer's candidate keys for reading a member from a plain dict come from a cache.

    moto asks its alias providers, per value, which keys may hold a member; for a dict (no Meta aliases,
    class name "dict") the answer depends only on the member's shape, its parent shape and its name.
    """
    picker = moto_serialize.XFormedAttributePicker
    original = picker.get_possible_keys
    known: dict[tuple[int, int, str, tuple[type, ...]], tuple[Any, Any, tuple[str, ...]]] = {}

    def get_possible_keys(self: Any, context: Any) -> Any:
        if type(context.obj) is not dict:
            return original(self, context)
        shape = context.shape
        parent = getattr(shape, "parent", None)
        key = (id(shape), id(parent), context.key, tuple(self.alias_providers))
        entry = known.get(key)
        if entry is None or entry[0] is not shape or entry[1] is not parent:
            if len(known) >= MAX_ENTRIES * 16:
                known.clear()
            entry = known[key] = (shape, parent, tuple(original(self, context)))
        return entry[2]

    with _swapped((picker, "get_possible_keys", get_possible_keys)):
        yield
