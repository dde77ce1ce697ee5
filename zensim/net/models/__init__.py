"""Sharing models, found by name: one file per model plus one line in MODELS (protocol in base.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


def parse_model_options(items: Sequence[str], model: str, flag: str = "--model-option") -> dict[str, object]:
    """Options for model `model` from 'KEY=VALUE' texts (the CLI's repeated `flag`): each KEY one the
    model declares (`options`), each VALUE read as the type of its default (a number, true/false or
    text); a one-line ConfigError naming `flag` otherwise. The analytic model (closed forms) takes none."""
    declared = MODELS[model].options if model in MODELS else {}
    out: dict[str, object] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in declared:
            takes = ", ".join(f"{k}={v!r}" for k, v in declared.items()) or "none"
            raise ConfigError(f"{flag} {item}: model {model} takes KEY=VALUE of its options (its options and defaults: "
                              f"{takes})")
        out[key] = _typed(text.strip(), declared[key], f"{flag} {item}")
    return out


def _typed(text: str, default: object, what: str) -> object:
    """`text` as a value of the type of `default` (bool, int, float or str); ConfigError naming `what`."""
    if isinstance(default, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ConfigError(f"{what}: expected true or false")
        return text.lower() in ("true", "1")
    if isinstance(default, (int, float)):
        try:
            value = type(default)(text)
        except ValueError:
            raise ConfigError(f"{what}: expected {'an integer' if isinstance(default, int) else 'a number'}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{what}: expected a finite number")
        return value
    return text
