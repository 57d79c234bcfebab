"""What a Python worker keeps in memory between loads is bounded by count and by weight."""
from __future__ import annotations

from cmi_datasource.engine.memo import KeptInMemory


def test_the_least_recently_used_go_first_within_the_count():
    kept = KeptInMemory(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # a is now the most recent
    kept.put("c", 3)
    assert "b" not in kept and kept.get("a") == 1 and kept.get("c") == 3


def test_the_weight_bounds_what_is_kept_and_a_value_too_heavy_alone_is_not_kept():
    kept = KeptInMemory(10, weight=10, weigh=len)
    kept.put("small", [0] * 4)
    kept.put("medium", [0] * 5)
    kept.put("more", [0] * 3)  # 12 in all: the oldest goes
    assert "small" not in kept and len(kept) == 2
    assert kept.put("huge", [0] * 11) == [0] * 11  # handed back, not kept
    assert "huge" not in kept and len(kept) == 2
    kept.put("more", [0] * 11)  # a key whose new value is too heavy is forgotten, not kept stale
    assert "more" not in kept
