"""Unit strings: bits vs bytes, decimal prefixes, malformed input as one-line ConfigError."""

import pytest

from zensim.errors import ConfigError
from zensim.net.units import format_bandwidth, parse_bandwidth, parse_latency


@pytest.mark.parametrize("text,bytes_per_s", [
    ("25Gbps", 25e9 / 8), ("300GB/s", 300e9), ("200mbit", 200e6 / 8), ("1.5Gbit/s", 1.5e9 / 8),
    ("10MB/s", 10e6), ("100 Gbps", 100e9 / 8), ("1e3Mbps", 1e9 / 8), ("800kbit", 800e3 / 8), (1e9, 1e9),
])
def test_bandwidth(text, bytes_per_s):
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s, rel=1e-15)


def test_bits_and_bytes_differ_by_eight():
    assert parse_bandwidth("8Gbps") == parse_bandwidth("1GB/s")


@pytest.mark.parametrize("text,seconds", [("5us", 5e-6), ("1ms", 1e-3), ("200ns", 2e-7), ("0s", 0.0), ("2s", 2.0)])
def test_latency(text, seconds):
    assert parse_latency(text) == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("text", ["fast", "25", "25Gb/x", "-5Gbps", "0Gbps", "25 G", "Gbps", ""])
def test_malformed_bandwidth(text):
    with pytest.raises(ConfigError) as err:
        parse_bandwidth(text, "--nic")
    assert str(err.value).startswith("--nic:") and "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["5", "5 sec", "-1ms", "1h"])
def test_malformed_latency(text):
    with pytest.raises(ConfigError):
        parse_latency(text)


def test_format_round_trip():
    assert format_bandwidth(parse_bandwidth("25Gbps")) == "25Gbps"
