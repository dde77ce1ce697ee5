"""Sharing models, found by name: one file per model plus one line in MODELS (protocol in base.py)."""

from __future__ import annotations

from collections.abc import Mapping

from zensim.errors import ConfigError
from zensim.net.models import fifo, maxmin
from zensim.net.models.base import NetworkView, SharingModel

MODELS: dict[str, type[SharingModel]] = {
    fifo.Fifo.name: fifo.Fifo,
    maxmin.MaxMin.name: maxmin.MaxMin,
}


def make_model(name: str, net: NetworkView, options: Mapping[str, object]) -> SharingModel:
    """The model `name` on `net` with the options it accepts (its defaults for the others); options that no model accepts, or an
    unknown name, are a ConfigError (a sweep over models may pass one set of options to all)."""
    if name not in MODELS:
        raise ConfigError(f"--model: unknown sharing model {name!r} (choose from {', '.join(MODELS)})")
    known = {key for model in MODELS.values() for key in model.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"unknown sharing-model option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    cls = MODELS[name]
    return cls(net, **{**cls.options, **{k: v for k, v in options.items() if k in cls.options}})


def model_option(model: str, key: str, value: object) -> object:
    """Option `key` of model `model` (one it declares in `options`), `value` read as the type of its
    default: text from the command line ('0.5', 'true') or a YAML scalar of that type. A ConfigError
    saying the problem (without the place: the caller names the flag or the key) otherwise; the
    analytic model (closed forms) declares none."""
    declared = MODELS[model].options if model in MODELS else {}
    if key not in declared:
        takes = ", ".join(f"{k}={v!r}" for k, v in declared.items()) or "none"
        raise ConfigError(f"not an option of model {model} (its options and defaults: {takes})")
    return _typed(value, declared[key])


def _typed(value: object, default: object) -> object:
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
