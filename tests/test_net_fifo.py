"""The fifo model's own property: a link serves one message at a time, in the order heads reach it."""

import pytest

from zensim.net.costs import Costs
from zensim.net.models.fifo import Fifo
from zensim.net.profile import WorkCost
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog

B = 25e9 / 8


def test_two_flows_on_a_link_are_served_one_after_the_other():
    """Two 1 MB messages into one downlink: one ends at 1 MB / b, the other at 2 MB / b."""
    log = MessageLog(3, 1, [Message(0, 0, 2, 10**6, "coo"), Message(0, 1, 2, 10**6, "coo")])
    t = replay(log, Costs(ClusterSpec(3, 1, B), WorkCost.zero()), Fifo.name)
    assert sorted(t.msg_end) == pytest.approx([1e6 / B, 2e6 / B], rel=1e-12)
