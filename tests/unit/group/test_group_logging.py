"""The coordinator's INFO log: one line per completed generation or emptied group."""

from __future__ import annotations

import logging


def test_rebalance_chatter_is_debug_and_each_generation_one_info_line(h, caplog):
    caplog.set_level(logging.INFO, logger="core.group")
    a, b = h.stable_group(2)
    h.coordinator.leave_group("g", [(a.member_id, None)])
    rejoined = h.join(b.member_id).one()
    h.sync(b.member_id, rejoined.generation_id, {b.member_id: b"x"}).one()
    h.tick(10_001)  # b's session expires: the group empties
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert [line.split(" with ")[0] for line in lines] == [
        "Stabilized group g generation 1", "Stabilized group g generation 2",
        "Stabilized group g generation 3", "group g"]
    assert lines[-1] == "group g with generation 4 is now empty"
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == []  # nothing below INFO reaches a default-level handler
