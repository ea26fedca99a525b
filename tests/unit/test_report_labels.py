"""Allure behaviour labels: the topology's shape from the flows, one story per fault."""

from __future__ import annotations

import pytest

from mirrordrill.reports.labels import topology_shape


@pytest.mark.parametrize("flows, shape", [
    (["primary->dr"], "active-passive"),
    (["east->west", "west->east"], "active-active"),
    (["a->b", "b->a", "b->c", "c->b", "a->c", "c->a"], "mesh"),
    (["primary->dr1", "primary->dr2"], "fan-out"),
    (["spoke1->hub", "spoke2->hub", "spoke3->hub"], "hub-and-spoke"),
    (["a->b (via x)", "b->c"], "chain"),
    (["a->b", "b->a", "c->d"], "mixed"),
    ([], "no flow"),
])
def test_the_shape_is_read_from_the_flows(flows, shape):
    assert topology_shape(flows) == shape
