"""Resolves a template's Conditions for given parameter values, as CloudFormation does before it deploys.

`resolve()` returns the template one configuration deploys: every resource and output whose Condition is
false dropped (the rest lose their Condition key), every Fn::If replaced by the branch its condition picks,
every Ref to AWS::NoValue removed with the key or list item holding it, and the Conditions section gone.
Everything else (Ref to resources, Fn::Sub, Fn::GetAtt, ...) stays as written, so the result is still a
template: cfn-lint can check it (tests/unit/test_template_configurations.py), and with
substitute_parameters the local stack reads values such as a table's provisioned throughput from it.

Only the condition functions CloudFormation allows in Conditions are understood: Fn::Equals, Fn::Not,
Fn::And, Fn::Or and Condition; an Fn::Equals operand is a literal or a Ref to a parameter. Anything else
raises ValueError, naming the condition.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

NO_VALUE = "AWS::NoValue"
# Pseudo parameters a condition could name; their values are those of the local deployments.
PSEUDO_PARAMETERS = {"AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}


class _Removed:
    """The value of a Ref to AWS::NoValue: its key or list item goes."""


_REMOVED = _Removed()


def parameter_values(
    template: Mapping[str, Any], overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Returns every parameter's value as a string: the override when given, else the template's default.

    Raises ValueError for an override of a parameter the template lacks, a value outside AllowedValues,
    or a parameter with neither (CloudFormation refuses those three too).
    """
    declared: Mapping[str, Any] = template.get("Parameters", {})
    given = dict(overrides or {})
    unknown = set(given) - set(declared)
    if unknown:
        raise ValueError(f"the template has no parameter {sorted(unknown)}")
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in given:
            value = str(given[name])
        elif "Default" in spec:
            value = str(spec["Default"])
        else:
            raise ValueError(f"parameter {name} has no default: give it a value")
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            raise ValueError(f"parameter {name}={value!r} is not one of {allowed}")
        values[name] = value
    return values


class _Conditions:
    """Evaluates named conditions on demand, each once; a cycle or an unknown name raises ValueError."""

    def __init__(self, definitions: Mapping[str, Any], parameters: Mapping[str, str]) -> None:
        self._definitions = definitions
        self._parameters = parameters
        self._known: dict[str, bool] = {}

    def truth(self, name: str, seen: tuple[str, ...] = ()) -> bool:
        if name in self._known:
            return self._known[name]
        if name in seen:
            raise ValueError(f"condition {name} refers to itself through {' -> '.join(seen)}")
        if name not in self._definitions:
            raise ValueError(f"no condition named {name}")
        self._known[name] = self._evaluate(self._definitions[name], (*seen, name))
        return self._known[name]

    def _operand(self, value: Any, seen: tuple[str, ...]) -> str:
        if isinstance(value, Mapping):
            name = str(value.get("Ref")) if set(value) == {"Ref"} else ""
            if name in self._parameters:
                return self._parameters[name]
            if name in PSEUDO_PARAMETERS:
                return PSEUDO_PARAMETERS[name]
            raise ValueError(f"condition {seen[-1]}: unsupported operand {value!r}")
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def _evaluate(self, expression: Any, seen: tuple[str, ...]) -> bool:
        if not isinstance(expression, Mapping) or len(expression) != 1:
            raise ValueError(f"condition {seen[-1]}: unsupported expression {expression!r}")
        [(function, arguments)] = expression.items()
        if function == "Condition":
            return self.truth(str(arguments), seen)
        if function == "Fn::Equals":
            left, right = arguments
            return self._operand(left, seen) == self._operand(right, seen)
        if function == "Fn::Not":
            [inner] = arguments
            return not self._evaluate(inner, seen)
        if function == "Fn::And":
            return all(self._evaluate(inner, seen) for inner in arguments)
        if function == "Fn::Or":
            return any(self._evaluate(inner, seen) for inner in arguments)
        raise ValueError(f"condition {seen[-1]}: unsupported function {function}")


def evaluate_conditions(template: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, bool]:
    """Returns the truth of every condition of the template for the given (complete) parameter values."""
    definitions: Mapping[str, Any] = template.get("Conditions", {})
    conditions = _Conditions(definitions, parameters)
    return {name: conditions.truth(name) for name in definitions}


class _Resolver:
    """Replaces Fn::If by its chosen branch and drops AWS::NoValue (and, if asked, Refs to parameters)."""

    def __init__(
        self, template: Mapping[str, Any], parameters: Mapping[str, str], substitute_parameters: bool
    ) -> None:
        self.truth = evaluate_conditions(template, parameters)
        self._declared: Mapping[str, Any] = template.get("Parameters", {})
        self._parameters = parameters
        self._substitute = substitute_parameters

    def _parameter(self, name: str) -> Any:
        value = self._parameters[name]
        if self._declared[name].get("Type") == "Number" and value.lstrip("-").isdigit():
            return int(value)
        return value

    def _chosen(self, arguments: Any) -> Any:
        name, when_true, when_false = arguments
        if name not in self.truth:
            raise ValueError(f"Fn::If names no condition: {name}")
        return when_true if self.truth[name] else when_false

    def walk(self, value: Any) -> Any:
        """Returns value resolved; _REMOVED for a Ref to AWS::NoValue."""
        if isinstance(value, list):
            return [item for item in (self.walk(item) for item in value) if item is not _REMOVED]
        if not isinstance(value, Mapping):
            return value
        if set(value) == {"Fn::If"}:
            return self.walk(self._chosen(value["Fn::If"]))
        if set(value) == {"Ref"}:
            if value["Ref"] == NO_VALUE:
                return _REMOVED
            if self._substitute and value["Ref"] in self._parameters:
                return self._parameter(str(value["Ref"]))
        walked = {key: self.walk(item) for key, item in value.items()}
        return {key: item for key, item in walked.items() if item is not _REMOVED}

    def entries(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Returns the resources or outputs whose Condition holds (or that have none), resolved."""
        kept = {}
        for logical_id, entry in body.items():
            name = entry.get("Condition")
            if name is None or self.truth[name]:
                kept[logical_id] = self.walk({key: item for key, item in entry.items() if key != "Condition"})
        return kept


def resolve(
    template: Mapping[str, Any],
    overrides: Mapping[str, str] | None = None,
    *,
    substitute_parameters: bool = False,
) -> dict[str, Any]:
    """Returns a copy of the template as deployed with these parameter overrides (module docstring).

    With substitute_parameters, a Ref to a parameter becomes its value too (an int for a Number parameter
    holding an integer), for callers that read values rather than lint a template; the Parameters section
    stays either way.
    """
    resolver = _Resolver(template, parameter_values(template, overrides), substitute_parameters)
    resolved: dict[str, Any] = {}
    for section, body in template.items():
        if section in {"Resources", "Outputs"}:
            resolved[section] = resolver.entries(body)
        elif section == "Globals":
            resolved[section] = resolver.walk(body)
        elif section != "Conditions":
            resolved[section] = copy.deepcopy(body)
    return resolved
