"""Batch commands on a Dask cluster give the answers of the local engine."""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.engine import LocalEngine, make_engine
from visdup.errors import InputError

distributed = pytest.importorskip(
    "distributed", reason="Dask is not installed (pip install 'visdup[dask]')"
)


def _square(x: int) -> int:
    return x * x


def test_local_engine_keeps_order():
    assert list(LocalEngine().map(_square, range(5))) == [0, 1, 4, 9, 16]


def test_engine_choice_is_checked():
    with pytest.raises(InputError, match="--engine"):
        make_engine("spark")
    with pytest.raises(InputError, match="--scheduler"):
        make_engine("local", "tcp://127.0.0.1:1")


def _wait_for(path: Path, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{path} never appeared")


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A Dask scheduler and two single-thread workers on 127.0.0.1, started for these tests."""
    folder = tmp_path_factory.mktemp("dask")
    info = folder / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    bindir = Path(sys.executable).parent
    procs = [
        subprocess.Popen(
            [
                str(bindir / "dask"),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(info),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    ]
    try:
        _wait_for(info)
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        str(bindir / "dask"),
                        "worker",
                        "--scheduler-file",
                        str(info),
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
            )
        address = json.loads(info.read_text())["address"]
        client = distributed.Client(address, timeout="30s")
        client.wait_for_workers(2, timeout=60)
        client.close()
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _run(argv: list[str], capsys) -> object:
    status = main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    return json.loads(out)


@pytest.mark.slow
def test_dask_engine_keeps_order(scheduler):
    engine = make_engine("dask", scheduler)
    try:
        # a function the workers can import (this test module is not on their path)
        assert list(engine.map(operator.neg, range(100))) == [-x for x in range(100)]
    finally:
        engine.close()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["dups", "cluster"])
def test_dask_gives_the_local_answers(scheduler, capsys, command):
    local = _run([command, "--json", str(SITE_ROOT)], capsys)
    dask = _run(
        [command, "--json", "--engine", "dask", "--scheduler", scheduler, str(SITE_ROOT)], capsys
    )
    assert local == dask


@pytest.mark.slow
def test_dask_extract_gives_the_local_dataset(scheduler, tmp_path):
    local, dask = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    assert main(["extract", str(SITE_ROOT), "--out", str(local)]) == 0
    argv = ["extract", str(SITE_ROOT), "--out", str(dask), "--engine", "dask"]
    assert main([*argv, "--scheduler", scheduler]) == 0
    assert local.read_text() == dask.read_text()


def test_unreachable_scheduler_is_bad_input(capsys):
    status = main(["dups", "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", str(SITE_ROOT)])
    assert status == 2
    assert "Dask scheduler" in capsys.readouterr().err
