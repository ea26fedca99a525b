"""Listener ports: outside the ephemeral range, and never one another mirrordrill process holds."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from mirrordrill.primitives.ports import BLOCK, PortAllocator, ephemeral_range, listener_range

# Windows for the tests below: above the ephemeral range, where neither outgoing connections nor
# the listeners of drills running beside the tests take ports (those come from below it).
SPARE = ephemeral_range()[1] + 1 if ephemeral_range()[1] + 1 + 6 * BLOCK <= 65536 else listener_range(ephemeral_range())[0]


def test_listeners_get_ports_below_the_ephemeral_range_when_it_leaves_room():
    assert listener_range((32768, 60999)) == (10000, 32768)


def test_listeners_go_above_the_ephemeral_range_when_nothing_is_left_below():
    assert listener_range((10100, 49151)) == (49152, 65536)


def test_a_range_that_covers_every_port_is_refused_naming_the_setting():
    with pytest.raises(RuntimeError, match="ip_local_port_range"):
        listener_range((1024, 65535))


def test_the_kernels_range_is_read_and_a_missing_file_means_the_iana_range(tmp_path):
    f = tmp_path / "range"
    f.write_text("32768\t60999\n")
    assert ephemeral_range(f) == (32768, 60999)
    assert ephemeral_range(tmp_path / "absent") == (49152, 65535)


def test_ports_on_this_machine_are_outside_its_ephemeral_range(tmp_path):
    low, high = ephemeral_range()
    with PortAllocator(lock_dir=tmp_path) as ports:
        taken = [ports.take() for _ in range(BLOCK + 5)]  # more than one block
    assert len(set(taken)) == len(taken)
    assert not any(low <= p <= high for p in taken)


def test_two_allocators_never_share_a_port_and_a_closed_one_gives_its_block_back(tmp_path):
    window = (SPARE, SPARE + 2 * BLOCK)  # room for exactly two blocks
    a = PortAllocator(lock_dir=tmp_path, ports=window)
    b = PortAllocator(lock_dir=tmp_path, ports=window)
    from_a = {a.take() for _ in range(BLOCK)}
    from_b = {b.take() for _ in range(BLOCK)}
    assert not from_a & from_b
    c = PortAllocator(lock_dir=tmp_path, ports=window)
    with pytest.raises(RuntimeError, match="other mirrordrill runs hold them all"):
        c.take()
    a.close()
    assert c.take() in from_a


def test_a_block_another_process_holds_is_skipped_until_that_process_ends(tmp_path):
    window = (SPARE + 2 * BLOCK, SPARE + 4 * BLOCK)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from mirrordrill.primitives.ports import PortAllocator
        ports = PortAllocator(lock_dir=Path({str(tmp_path)!r}), ports={window!r})
        print(ports.take(), flush=True)
        sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        held = int(holder.stdout.readline())
        held_block = range(held - (held - window[0]) % BLOCK, held - (held - window[0]) % BLOCK + BLOCK)
        with PortAllocator(lock_dir=tmp_path, ports=window) as ours:
            assert not {ours.take() for _ in range(BLOCK)} & set(held_block)
    finally:
        holder.communicate("\n", timeout=30)
    with PortAllocator(lock_dir=tmp_path, ports=window) as ours, \
            PortAllocator(lock_dir=tmp_path, ports=window) as theirs:
        ours.take(), theirs.take()  # both blocks are free again once the holder has exited


def test_a_port_something_listens_on_is_not_given_out(tmp_path):
    window = (SPARE + 4 * BLOCK, SPARE + 5 * BLOCK)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", window[0]))
        busy.listen()
        with PortAllocator(lock_dir=tmp_path, ports=window) as ports:
            taken = [ports.take() for _ in range(BLOCK - 1)]
    assert window[0] not in taken
    assert taken == list(range(window[0] + 1, window[1]))
