"""Shared fixtures: golden vectors location and hypothesis profiles."""

import json
import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("long", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = pathlib.Path(__file__).resolve().parent.parent


def vectors_dir() -> pathlib.Path:
    env = os.environ.get("NDPACK_VECTORS")
    for cand in ([pathlib.Path(env)] if env else []) + [REPO.parent / "shared" / "spec" / "vectors"]:
        if (cand / "manifest.json").exists():
            return cand
    pytest.fail("golden vectors not found: set NDPACK_VECTORS to ../shared/spec/vectors")


@pytest.fixture(scope="session")
def vectors() -> pathlib.Path:
    return vectors_dir()


@pytest.fixture(scope="session")
def manifest(vectors) -> list:
    return json.loads((vectors / "manifest.json").read_text())["files"]
