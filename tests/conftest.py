"""Shared pytest fixtures: stores (on SQLite and on PostgreSQL), synthetic nsys traces, and the
real traces recorded by others (not in the repository; tests skip without them)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.paths import shared_traces_dir
from tests.support.stores import POSTGRES_ENV, postgres_test_url, scratch_postgres_url
from tracekit.store import open_store
from tracekit.store.db import Store
from tracekit.synth.nsys import KernelSpec, RankSpec, Scenario, StepSpec, write_scenario


@pytest.fixture
def shared_trace() -> Callable[[str], Path]:
    """Path of a real trace under shared/traces; skips the test when it is absent."""

    def locate(relative: str) -> Path:
        base = shared_traces_dir()
        if base is None or not (base / relative).exists():
            pytest.skip(f"real trace {relative} not available")
        return base / relative

    return locate


#: The store back ends every store test runs on; PostgreSQL's carries the ``postgres`` mark
#: (``-m "not postgres"`` leaves it out) and skips without ``TRACEKIT_TEST_POSTGRES_URL``.
STORE_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose tables live in a fresh schema of the test server, dropped afterwards; skips
    the test when ``TRACEKIT_TEST_POSTGRES_URL`` is not set (``.ci/run`` sets it)."""
    base = postgres_test_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    with scratch_postgres_url(base) as url:
        yield url


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL for an empty store, once per back end: a SQLite file ``tmp_path/store.db``, then
    a scratch schema on the PostgreSQL test server."""
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
        return
    yield request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A fresh store opened for writing, on SQLite and on PostgreSQL (see ``store_url``)."""
    opened = open_store(store_url)
    yield opened
    opened.dispose()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """A fresh SQLite store ``tmp_path/store.db``, for tests of what only SQLite has (query
    plans, the file itself)."""
    opened = open_store(str(tmp_path / "store.db"))
    yield opened
    opened.dispose()


@pytest.fixture
def make_trace(tmp_path: Path) -> Callable[..., Path]:
    """Write a Scenario (or a list of ranks) as an nsys-schema SQLite file."""
    counter = iter(range(10_000))

    def build(scenario: Scenario | list[RankSpec], name: str | None = None) -> Path:
        if isinstance(scenario, list):
            scenario = Scenario(ranks=scenario)
        return write_scenario(scenario, tmp_path / (name or f"trace{next(counter)}.sqlite"))

    return build


BF16_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
             "execute_segment_k_off_kernel__5x_cublas")
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<"
               "c10::BFloat16>, at::detail::Array<char *, 3>>(int, T2, T3)")


@pytest.fixture
def simple_scenario() -> Scenario:
    """One H100 rank: two vLLM-style prefill steps, three decode steps, one stray kernel."""
    return Scenario(ranks=[RankSpec(pid=4242, steps=[
        StepSpec("execute_context_1(512)_generation_0(0)",
                 [KernelSpec(BF16_GEMM, 40_000, count=4), KernelSpec(ELEMENTWISE, 2_000, count=2)],
                 repeat=2),
        StepSpec("execute_context_0(0)_generation_4(4)",
                 [KernelSpec(BF16_GEMM, 9_000, count=4), KernelSpec(ELEMENTWISE, 1_500)],
                 graph=True, repeat=3),
        StepSpec(None, [KernelSpec(ELEMENTWISE, 700)]),
    ])])


def have_tool(name: str) -> bool:
    """True when an external command is on PATH."""
    return shutil.which(name) is not None
