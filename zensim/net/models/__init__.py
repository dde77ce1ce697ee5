"""Sharing models, found by name: one file per model plus one line in MODELS (protocol in base.py)."""

from __future__ import annotations

from collections.abc import Mapping

from zensim.errors import ConfigError
from zensim.net.models import fifo, maxmin
from zensim.net.models.base import NetworkView, SharingModel
from zensim.net.options import declared_option

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
    return declared_option(f"model {model}", MODELS[model].options if model in MODELS else {}, key, value)
