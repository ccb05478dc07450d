"""Work in forked processes (:mod:`bayes_raters.forked`)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from bayes_raters.forked import fork_workers, map_forked


def test_a_closure_runs_in_child_processes_and_returns_in_order():
    offset = np.arange(3.0)  # a closure over an array: inherited by the fork, never pickled

    def work(item):
        return os.getpid(), offset + item

    done = map_forked(work, [10, 20, 30, 40])
    assert [list(values) for _, values in done] == [[10, 11, 12], [20, 21, 22], [30, 31, 32], [40, 41, 42]]
    pids = {pid for pid, _ in done}
    if fork_workers(4) > 1:
        assert os.getpid() not in pids
    else:
        pytest.skip("one usable core or no fork here: threads ran the work")


def test_threads_when_asked():
    done = map_forked(lambda item: (os.getpid(), item * 2), [1, 2, 3], processes=False)
    assert [value for _, value in done] == [2, 4, 6]
    assert {pid for pid, _ in done} == {os.getpid()}


def test_an_error_in_a_child_reaches_the_caller():
    def fails(item):
        raise ValueError(f"bad item {item}")

    with pytest.raises(ValueError, match="bad item"):
        map_forked(fails, [1, 2])
