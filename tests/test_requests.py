"""Typed requests (zensim.sim.request): every field of every request is a flag of its command and a key
of a scenario with the same default; the command and the scenario build equal requests from the same
settings and refuse a bad value with the same problem on one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from test_scenario_training import inputs, scenario  # noqa: F401 (the fixture)
from zensim.cli import build_parser, main
from zensim.errors import ConfigError
from zensim.request import options_of
from zensim.sim.request import ClusterRequest, IterationRequest, ReplayRequest, SimulateRequest
from zensim.sim.scenario import CLUSTER_DEFAULTS, REPLAY_KEYS, TOP_KEYS, TRAINING_DEFAULTS, load_scenario

DIGITS = Path(__file__).resolve().parent.parent / "traces" / "digits-cnn-16w.zt"
# command -> its request, the arguments it needs, the scenario section of the mode's own keys and its defaults
COMMANDS = {"simulate": (ClusterRequest, ["--trace", "t.zt"], {}),
            "simulate --iterations": (ReplayRequest, ["--trace", "t.zt"], dict.fromkeys(REPLAY_KEYS)),
            "iteration": (IterationRequest, [], TRAINING_DEFAULTS)}


def yaml_defaults(section: dict) -> dict:
    """Every key a scenario's point reads, with the default a scenario gives it when it is absent."""
    return {**CLUSTER_DEFAULTS, **section, "model": "fifo", "maxmin_batch": ClusterRequest.maxmin_batch,
            "model_options": None, "iteration": 0}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_field_is_a_flag_and_a_yaml_key_with_one_default(command: str) -> None:
    cls, required, section = COMMANDS[command]
    name = command.split()[0]
    args = build_parser().parse_args([name, *required])
    flags = {s for a in build_parser()._subparsers._group_actions[0].choices[name]._actions for s in a.option_strings}
    keys = yaml_defaults(section)
    for field in dataclasses.fields(cls):
        opt = options_of(cls)[field.name]
        assert opt.flag in flags, (command, field.name)
        assert opt.key in keys, (command, field.name)
        assert getattr(args, field.name) == field.default, (command, field.name)  # the parser's default
        if opt.key not in section or section[opt.key] is not None:  # (a replay's keys: ReplayRequest's defaults)
            assert keys[opt.key] == field.default, (command, field.name)          # the scenario's default
    assert cls.from_args(args) == cls()  # nothing given: the request of the defaults


def test_the_command_and_the_scenario_make_the_same_request(tmp_path: Path, inputs) -> None:  # noqa: F811
    trace, layers = inputs
    argv = ["iteration", "--trace", str(trace), "--layers", str(layers), "--machines", "2", "--gpus-per-machine", "2",
            "--nic", "10Gbps", "--model", "maxmin", "--maxmin-batch", "0.5", "--iterations", "3", "--first-iteration",
            "1", "--bucket-mb", "0.5", "--dense-algorithm", "ring", "--sparse-tensors", "emb.weight", "--shared-host"]
    cli = IterationRequest.from_args(build_parser().parse_args(argv))
    path = scenario(tmp_path, inputs, "trace: {path: TRACE, iteration: 1}\n"
                    "cluster: {machines: 2, gpus_per_machine: 2, nic: 10Gbps}\nmodel: maxmin\nmaxmin_batch: 0.5\n"
                    "schemes: [zen]\ntraining: {layers: LAYERS, iterations: 3, bucket_mb: 0.5, dense_algorithm: ring, "
                    "sparse_tensors: [emb.weight], shared_host: true}\n")
    assert load_scenario(path).points[0].training == cli
    assert cli.nic == 10e9 / 8 and cli.sparse_tensors == ("emb.weight",) and cli.first_iteration == 1


@pytest.mark.parametrize("flag, key, value, problem", [
    ("--machines", "cluster.machines", "0", "must be at least 1"),
    ("--fabric", "cluster.fabric", "torus", "unknown fabric (choose from switch, leafspine, fattree, ring)"),
    ("--maxmin-batch", "maxmin_batch", "2", "expected a number in [0, 1]"),
    ("--iterations", "training.iterations", "0", "must be at least 1"),
    ("--density", "training.density", "0", "expected a number in (0, 1]"),
    ("--dense-work", "training.dense_work", "none", "unknown dense_work (choose from fused, profile, free)"),
    ("--host-others", "training.host_others", "many", "expected a number in [0, inf)"),
])
def test_a_bad_value_is_the_same_problem_from_the_command_and_the_scenario(
        tmp_path: Path, inputs, capsys: pytest.CaptureFixture, flag: str, key: str, value: str,  # noqa: F811
        problem: str) -> None:
    trace, layers = inputs
    assert main(["iteration", "--trace", str(trace), "--layers", str(layers), "--machines", "2", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"zensim: error: {flag} {value}: {problem}"
    section, _, name = key.rpartition(".")
    number = value if value.isdigit() else repr(value)
    settings = {"cluster": {"machines": 2}, "training": {"layers": str(layers)}}
    if section:
        settings[section][name] = int(value) if value.isdigit() else value
    top = f"{name}: {value}\n" if not section else ""
    body = (f"trace: TRACE\nschemes: [zen]\ncluster: {settings['cluster']}\ntraining: {settings['training']}\n"
            .replace("'", "") + top)
    path = scenario(tmp_path, inputs, body)
    with pytest.raises(ConfigError) as exc:
        load_scenario(path)
    assert str(exc.value) == f"{path}: {key}: {problem}, got {number}"


def test_iteration_takes_the_presets_gpus_as_a_scenario_does(inputs) -> None:  # noqa: F811
    """One default for GPUs per machine (the preset's, else 1): `zensim iteration` used to force 8."""
    trace, layers = inputs
    base = ["iteration", "--trace", str(trace), "--layers", str(layers), "--machines", "2"]
    assert IterationRequest.from_args(build_parser().parse_args(base)).build()[0].gpus_per_machine == 1
    preset = IterationRequest.from_args(build_parser().parse_args(base + ["--preset", "p3.16xlarge"]))
    assert preset.build()[0].gpus_per_machine == 8


def test_a_replay_refuses_what_it_would_ignore_from_both(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The replay times every iteration on a sharing model with its default batch and runs every GPU as a
    rank: a scenario used to swap analytic for fifo silently, and both ignored the layout and the batch."""
    base = ["simulate", "--trace", str(DIGITS), "--replay", "0:2", "--machines", "2", "--scheme", "topka"]
    for extra, problem in ((["--model", "analytic"], "--model: analytic has no timeline for a replay over iterations "
                            "(use fifo or maxmin)"),
                           (["--gpus-per-machine", "2"], "--layout: zen with 2 GPUs per machine, but a replay runs "
                            "every GPU as a rank of the scheme: give the flat layout")):
        assert main(base + extra) == 2
        assert capsys.readouterr().err.strip() == f"zensim: error: {problem}"
    for body, problem in (("model: analytic\n", "model: analytic has no timeline"),
                          ("cluster: {machines: 2, gpus_per_machine: 2}\n", "cluster.layout: zen with 2 GPUs")):
        path = tmp_path / "r.yaml"
        path.write_text(f"trace: {DIGITS}\nschemes: [topka]\niterations: '0:2'\n" + body)
        with pytest.raises(ConfigError, match=rf"^{path}: {problem}"):
            load_scenario(path)
    path.write_text(f"trace: {DIGITS}\nschemes: [topka]\niterations: '0:2'\ncluster: {{machines: 2, gpus_per_machine: 2, "
                    "layout: flat}\n")
    req = load_scenario(path).points[0].replay
    assert req == ReplayRequest.from_args(build_parser().parse_args(base + ["--gpus-per-machine", "2", "--layout", "flat"]))


def test_model_and_fabric_options_are_typed_once_per_request(monkeypatch) -> None:
    import argparse

    import zensim.net.fabrics as fabrics
    import zensim.net.models as models
    from zensim.request import add_arguments

    typed: list[tuple] = []
    for module, name in ((models, "model_option"), (fabrics, "fabric_option")):
        read = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, read=read: typed.append(a) or read(*a))
    parser = argparse.ArgumentParser()
    add_arguments(parser, SimulateRequest)
    request = SimulateRequest.from_args(parser.parse_args(["--model", "maxmin", "--model-option", "batch=0",
                                                           "--fabric", "leafspine", "--fabric-option", "oversub=2"]))
    request.build()
    assert request.model_options == request.model_options == {"batch": 0.0}
    assert typed == [("maxmin", "batch", "0"), ("leafspine", "oversub", "2")]  # by validate only; were 3 and 2
