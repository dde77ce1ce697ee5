"""The bounded memo that runs own in place of module caches."""

import pytest

from zensim.memo import Memo


def test_a_memo_computes_once_per_key_and_keeps_at_most_its_size() -> None:
    made = []
    memo = Memo(size=2)

    def make(key):
        return lambda: made.append(key) or key * 10

    assert [memo.get(k, make(k)) for k in (1, 2, 1)] == [10, 20, 10] and made == [1, 2]
    memo.get(3, make(3))  # 2 is the least recently used: it leaves
    assert len(memo) == 2 and memo.get(1, make(1)) == 10 and made == [1, 2, 3]
    assert memo.get(2, make(2)) == 20 and made == [1, 2, 3, 2]
    with pytest.raises(ValueError):
        Memo(size=0)
