"""Start-up of two single-broker clusters and a WAN link: local processes vs containers, A/B.

    ./mirrordrill images build --only broker --only toxiproxy
    PYTHONPATH=. ~/.cache/mirrordrill/venv-*/bin/python -m tests.containers.bench_startup [ROUNDS]

Prints each round's seconds to usable (the readiness probe: a topic created, one record
produced with acks=all and read back) and the medians; asserts nothing about speed.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from harness.docker.engine import ensure_engine
from harness.docker.images import ImageSet
from harness.environment import Environment, TopologySpec
from harness.kafka.cluster import ClusterSpec
from primitives.bootstrap import Bootstrap

from .conftest import LAB_IMAGES, remove_labelled
from .lab import SESSION_LABEL, ContainerLab


def main(rounds: int) -> None:
    engine = ensure_engine()
    images = ImageSet(engine, log=lambda m: None)
    images.build(list(LAB_IMAGES))
    refs = {n: images.spec(n).ref for n in LAB_IMAGES}
    artifacts = Bootstrap().ensure_all(with_allure=False)
    spec = TopologySpec(clusters=(ClusterSpec("east"), ClusterSpec("west")))
    label = {SESSION_LABEL: f"bench-{uuid.uuid4().hex[:8]}"}
    times: dict[str, list[float]] = {"processes": [], "containers": []}
    with tempfile.TemporaryDirectory(prefix="mirrordrill-bench-") as tmp:
        try:
            for i in range(rounds):
                for backend in ("processes", "containers"):  # side by side, alternating
                    workdir = Path(tmp) / f"{backend}-{i}"
                    t = time.monotonic()
                    env = (Environment(spec, workdir, artifacts) if backend == "processes"
                           else ContainerLab(spec, workdir, refs, label, engine))
                    with env:
                        took = time.monotonic() - t
                    times[backend].append(took)
                    print(f"round {i + 1} {backend:10} usable in {took:5.1f}s", flush=True)
        finally:
            remove_labelled(engine, SESSION_LABEL, label[SESSION_LABEL])
    for backend, ts in times.items():
        print(f"{backend:10} median {statistics.median(ts):5.1f}s  (min {min(ts):.1f}, max {max(ts):.1f}, n={len(ts)})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
