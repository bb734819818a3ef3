"""The command lines pin torch's and MKL's CPU kernels before torch loads, unless the environment names them."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from rla_train.cpu_kernels import AVX2_NEEDS, PINNED_KERNELS, cpu_flags, cpu_model, pin_cpu_kernels
from tests.paths import REPO_ROOT

PINNED = tuple(PINNED_KERNELS)


AVX2_CPU = {"sse4_2", "avx", "avx2", "fma", "avx512f"}


def test_it_sets_what_the_environment_leaves_unset_and_keeps_what_it_sets():
    environ = {"MKL_CBWR": "AUTO", "PATH": "/bin"}
    applied = pin_cpu_kernels(environ, flags=AVX2_CPU)
    assert applied == {"ATEN_CPU_CAPABILITY": "avx2"}
    assert environ == {"MKL_CBWR": "AUTO", "PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx2"}
    assert pin_cpu_kernels(environ, flags=AVX2_CPU) == {}


def test_a_cpu_without_avx2_keeps_torchs_own_choice():
    environ: dict[str, str] = {}
    assert pin_cpu_kernels(environ, flags={"sse4_2", "avx"}) == {"MKL_CBWR": "COMPATIBLE"}
    assert pin_cpu_kernels({}, flags={"avx2"}) == {"MKL_CBWR": "COMPATIBLE"}   # AVX2 without FMA: not enough


def test_cpu_flags_reads_the_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse4_2 avx2 fma\n\nprocessor\t: 1\n")
    assert cpu_flags(str(cpuinfo)) == {"fpu", "sse4_2", "avx2", "fma"}
    assert cpu_flags(str(tmp_path / "absent")) == frozenset()


def test_cpu_model_names_the_vendor_the_model_and_the_wide_instruction_sets(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\n"
                       "flags\t\t: fpu avx2 fma avx512f\n\nprocessor\t: 1\nmodel name\t: other\n")
    assert cpu_model(str(cpuinfo)) == "AuthenticAMD, AMD EPYC 9R14, avx2 avx512f"
    cpuinfo.write_text("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: sse2 avx\n")
    assert cpu_model(str(cpuinfo)) == "GenuineIntel, Intel(R) Xeon(R) Processor, no AVX2"
    assert cpu_model(str(tmp_path / "absent")) == "unknown"


# Each script checks that torch is not loaded before the command line runs, then reports what torch saw once loaded:
# the variables and the kernel path it took (torch reads ATEN_CPU_CAPABILITY once, when it loads).
_REPORT = """
import json, os, sys
def report():
    import torch
    print("REPORT " + json.dumps({"environ": {name: os.environ.get(name) for name in %r},
                                  "capability": torch.backends.cpu.get_cpu_capability()}))
""" % (PINNED,)

_TRAIN = _REPORT + """
import types
fake_loop = types.ModuleType("rla_train.cotrainer.loop")
fake_loop.train = lambda config, overwrite=False: report()   # None: prints nothing, as a rank other than 0
sys.modules["rla_train.cotrainer.loop"] = fake_loop
from rla_train.run import main
assert "torch" not in sys.modules, "torch was loaded before the command line ran"
sys.exit(main(["--set", "output.dir=" + sys.argv[1]]))
"""

_EVALUATE = _REPORT + """
from benchmarks.evaluate.cli import main
assert "torch" not in sys.modules, "torch was loaded before the command line ran"
status = main(["--policy", sys.argv[1] + "/no-such-run", "--out", sys.argv[1] + "/eval", "--no-progress"])
report()
sys.exit(0 if status == 2 else 1)   # the missing run is refused after the pin, with exit status 2
"""

_ABLATION = _REPORT + """
from benchmarks.ablation.cli import main
assert "torch" not in sys.modules, "torch was loaded before the command line ran"
try:
    main(["--synthetic-only", "--real-only", "--out", sys.argv[1]])   # refused at the door, after the pin
except SystemExit as refused:
    assert refused.code == 2, refused.code
report()
"""

COMMAND_LINES = pytest.mark.parametrize("script", [_TRAIN, _EVALUATE, _ABLATION],
                                        ids=["rla_train.run", "benchmarks.evaluate", "benchmarks.ablation"])


def _run(script: str, tmp_path, **environ) -> dict:
    env = {name: value for name, value in os.environ.items() if name not in PINNED} | environ
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    line = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")][-1]
    return json.loads(line.removeprefix("REPORT "))


@COMMAND_LINES
def test_torch_loads_with_the_pinned_kernels(script, tmp_path):
    seen = _run(script, tmp_path)
    if AVX2_NEEDS <= cpu_flags():
        assert seen == {"environ": PINNED_KERNELS, "capability": "AVX2"}
    else:
        assert seen["environ"] == {"ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "COMPATIBLE"}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="torch's kernel paths are x86's")
@COMMAND_LINES
def test_kernels_the_environment_names_win(script, tmp_path):
    seen = _run(script, tmp_path, ATEN_CPU_CAPABILITY="default", MKL_CBWR="AUTO")
    assert seen == {"environ": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "AUTO"}, "capability": "DEFAULT"}


def test_the_ablation_and_evaluate_command_lines_give_torch_one_thread_without_cuda():
    # the ablation ran its per-seed processes with torch's default (2 threads each on 2 cores) before this
    import subprocess
    import sys

    import torch

    from tests.paths import REPO_ROOT

    if torch.cuda.is_available():
        pytest.skip("with CUDA torch keeps its own thread count")
    probe = ("import sys, torch; from rla_train.cpu_kernels import set_torch_threads; "
             "print(set_torch_threads(), torch.get_num_threads())")
    env = {k: v for k, v in __import__("os").environ.items() if k != "RLA_TORCH_THREADS"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "1"]
    env["RLA_TORCH_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["2", "2"]
    for module in ("benchmarks/ablation/cli.py", "benchmarks/evaluate/cli.py", "rla_train/run.py"):
        assert "set_torch_threads()" in (REPO_ROOT / module).read_text()
