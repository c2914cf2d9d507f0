"""The collector pause of bulk work (kgr.gc_freeze.cycle_collector_paused): the collector is off inside, restored after."""

from __future__ import annotations

import gc

import pytest

from kgr.gc_freeze import cycle_collector_paused


def test_the_pause_restores_the_collector_as_it_was():
    was = gc.isenabled()
    gc.enable()
    try:
        with cycle_collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(ValueError), cycle_collector_paused():
            raise ValueError
        assert gc.isenabled()
        gc.disable()
        with cycle_collector_paused():
            pass
        assert not gc.isenabled()  # disabled on entry: stays disabled
    finally:
        (gc.enable if was else gc.disable)()
