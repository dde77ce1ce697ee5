"""Every registered sharing model passes every conformance check (zensim.net.models.conformance)."""

import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.models import MODELS, conformance
from zensim.net.network import Network
from zensim.net.topology import ClusterSpec


@pytest.mark.parametrize("check", conformance.CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("model", list(MODELS))
def test_conformance(model, check):
    check(model)


@pytest.mark.parametrize("model", list(MODELS))
def test_registry_entry(model):
    cls = MODELS[model]
    assert cls.name == model and cls.summary and isinstance(cls.options, dict)


def test_unknown_model_and_options_are_config_errors():
    costs = Costs(ClusterSpec(2, 1, 1e9))
    with pytest.raises(ConfigError, match="unknown sharing model 'nope'"):
        Network(costs, "nope")
    with pytest.raises(ConfigError, match="unknown sharing-model option"):
        Network(costs, next(iter(MODELS)), {"no_such_option": 1})
    every = {key: value for cls in MODELS.values() for key, value in cls.options.items()}
    for model in MODELS:  # a sweep over models passes one set of options: each model takes its own
        Network(costs, model, every)
