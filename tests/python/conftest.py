"""Shared fixtures: configs over the loopback generator, and where the
build put vfgx (VFGX_BUILD, default build)."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("VFGX_BUILD", os.path.join(ROOT, "build"))


def loopback(packets=50000, flows=2, mem="host", chunk_packets=128, extra=""):
    return ("interfaces:\n"
            "  - backend: loopback\n"
            "    loopback: { packets: %d, flows: %d%s }\n"
            "pipeline:\n"
            "  device: cpu\n"
            "  chunks: { payload_bytes: 512, packets: %d, streams: %d, in_flight: 8, mem: %s }\n"
            % (packets, flows, extra, chunk_packets, flows, mem))


@pytest.fixture
def build_dir():
    return BUILD
