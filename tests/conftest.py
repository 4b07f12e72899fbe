"""Shared fixtures: golden vectors location and hypothesis profiles."""

import json
import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

# CI's examples are the same on every run (a red CI is a regression, not a new draw);
# the dev and long profiles explore.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("long", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

DATA = pathlib.Path(__file__).resolve().parent / "data"


def vectors_dir() -> pathlib.Path:
    """The golden vectors: ``tests/data/vectors`` (``NDPACK_VECTORS`` overrides it)."""
    env = os.environ.get("NDPACK_VECTORS")
    cand = pathlib.Path(env) if env else DATA / "vectors"
    if not (cand / "manifest.json").exists():
        pytest.fail(f"golden vectors not found in {cand} (tests/data/vectors, or NDPACK_VECTORS)")
    return cand


@pytest.fixture(scope="session")
def vectors() -> pathlib.Path:
    return vectors_dir()


@pytest.fixture(scope="session")
def manifest(vectors) -> list:
    return json.loads((vectors / "manifest.json").read_text())["files"]
