"""Options a part declares (a sharing model's, a fabric's): `options = {key: default}` on its class, and
a value given as text (the command line's KEY=VALUE) or as a YAML scalar read as the type of its
default. zensim.net.models.model_option and zensim.net.fabrics.fabric_option use it."""

from __future__ import annotations

from collections.abc import Mapping

from zensim.errors import ConfigError


def declared_option(owner: str, declared: Mapping[str, object], key: str, value: object) -> object:
    """Option `key` of `owner` ('model maxmin', 'fabric torus'), which declares `declared`: `value` as the
    type of its default, or a ConfigError saying the problem (the caller names the flag or the key)."""
    if key not in declared:
        takes = ", ".join(f"{k}={v!r}" for k, v in declared.items()) or "none"
        raise ConfigError(f"not an option of {owner} (its options and defaults: {takes})")
    return typed(value, declared[key])


def typed(value: object, default: object) -> object:
    """`value` (text, or a YAML scalar) as a value of the type of `default` (bool, int, float or str)."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if not isinstance(value, str) or value.lower() not in ("true", "false", "1", "0"):
            raise ConfigError("expected true or false")
        return value.lower() in ("true", "1")
    if isinstance(default, (int, float)):
        word = "an integer" if isinstance(default, int) else "a number"
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"expected {word}")
        try:
            number = type(default)(value)
        except ValueError:
            raise ConfigError(f"expected {word}") from None
        if isinstance(value, float) and isinstance(default, int) and number != value:
            raise ConfigError(f"expected {word}")
        if number != number or number in (float("inf"), float("-inf")):
            raise ConfigError("expected a finite number")
        return number
    if not isinstance(value, str):
        raise ConfigError("expected text")
    return value
