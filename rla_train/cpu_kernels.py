"""Which CPU kernels torch and MKL use, chosen so that a seeded run prints the same figures on the x86-64 machines of one kind.

Left to themselves, torch's vectorised kernels take the widest code path the CPU has (AVX-512 where present, else
AVX2) and MKL picks a matrix-product path per processor model; the paths round differently, so the same seeded run
gives different bits on different machines, and after a few hundred optimizer steps, different figures (the README's
main-job figures, measured on an earlier machine, and CI's run on an AVX2 AMD EPYC parted at the warm start).
:func:`pin_cpu_kernels` names one path for each, unless the environment already names one: set before torch is
imported, since both libraries read the variables once, when they load.

torch takes ``ATEN_CPU_CAPABILITY`` at its word (it does not check that the CPU has the instructions), so AVX2 is
asked for only where the CPU reports AVX2 and FMA; on a CPU without them torch's own choice stands, and figures there
may differ. Measured on an AMD EPYC with AVX-512: an 80-step warm start with torch's own choice (AVX-512) ends with
other weights than pinned (by up to 5.6e-05); pinned, and with MKL and oneDNN also held to AVX2
(``MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2``, the instruction sets of an AVX2-only machine), it ends with
the same bits. On an AVX2 one: ``ATEN_CPU_CAPABILITY=default`` and ``MKL_CBWR=COMPATIBLE`` each change the bits of a
warm start; ``MKL_CBWR=AVX2`` gives the same bits as leaving MKL alone there; neither costs measurable time on the
tiny default models. ``ATEN_CPU_CAPABILITY=avx512 MKL_CBWR=AUTO`` asks for the fastest kernels of the machine instead.

Not across CPU vendors, measured: pinned, an Intel Xeon (AVX-512, AMX) prints other main-job figures than the AMD
EPYCs did. Its SFT warm start ends with the same loss; its listwise warm start does not (1.0524 against 1.0608 over
the last 50 steps), and the episodes differ from there. On that Xeon, a shortened main job (40 + 40 warm-start steps,
one co-training step) ends with other weights under ``MKL_CBWR=AUTO``, ``ATEN_CPU_CAPABILITY=avx512`` or ``=default``,
and with the same bits under ``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_ENABLE_INSTRUCTIONS=AVX2``, numpy's AVX-512 loops off
(``NPY_DISABLE_CPU_FEATURES``), ``OPENBLAS_CORETYPE=Haswell``, oneDNN off (``torch.backends.mkldnn.enabled = False``)
or another ``PYTHONHASHSEED``: only torch's kernels and MKL's path reach the bits there, and both are pinned. What
parts the vendors (MKL's processor-independent path on Intel against AMD is the suspect) is not found without both
machines at hand.
"""

from __future__ import annotations

import os
from collections.abc import Collection, MutableMapping

__all__ = ["PINNED_KERNELS", "cpu_flags", "cpu_model", "pin_cpu_kernels", "set_torch_threads"]

PINNED_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}
"""torch's AVX2 kernels and MKL's processor-independent code path."""

AVX2_NEEDS = frozenset({"avx2", "fma"})
"""The CPU flags torch's AVX2 kernels are built for (torch's own detection asks for both)."""


def _cpu_fields(cpuinfo: str) -> dict[str, str]:
    """Each ``name : value`` of ``/proc/cpuinfo`` as its first line gives it, that is the first CPU's (empty where there
    is no such file)."""
    fields: dict[str, str] = {}
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as handle:
            for line in handle:
                key, colon, value = line.partition(":")
                if colon:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The instruction-set flags the first CPU of ``/proc/cpuinfo`` lists (empty where there is no such file)."""
    return frozenset(_cpu_fields(cpuinfo).get("flags", "").split())


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """What the figures of a seeded run depend on beyond the pin: the CPU's vendor and model name, and whether it has
    AVX-512 and AMX (e.g. ``GenuineIntel, Intel(R) Xeon(R) Processor, avx512f amx_tile``); ``unknown`` without
    ``/proc/cpuinfo``."""
    fields = _cpu_fields(cpuinfo)
    vendor, name, flags = fields.get("vendor_id"), fields.get("model name"), set(fields.get("flags", "").split())
    if vendor is None and name is None:
        return "unknown"
    wide = " ".join(flag for flag in ("avx2", "avx512f", "amx_tile") if flag in flags)
    return ", ".join(part for part in (vendor, name, wide or "no AVX2") if part)


def pin_cpu_kernels(environ: MutableMapping[str, str] | None = None,
                    flags: Collection[str] | None = None) -> dict[str, str]:
    """Set each of :data:`PINNED_KERNELS` that ``environ`` (default ``os.environ``) does not already set.

    ``ATEN_CPU_CAPABILITY`` only where ``flags`` (default: :func:`cpu_flags`) hold :data:`AVX2_NEEDS`: forced on a
    CPU without them, torch would run instructions the CPU lacks. Returns the ones it set. Call it before
    ``import torch``: once torch has loaded, the choice is made.
    """
    environ = os.environ if environ is None else environ
    has_avx2 = AVX2_NEEDS <= set(cpu_flags() if flags is None else flags)
    applied = {name: value for name, value in PINNED_KERNELS.items()
               if name not in environ and (name != "ATEN_CPU_CAPABILITY" or has_avx2)}
    environ.update(applied)
    return applied


def set_torch_threads(environ: MutableMapping[str, str] | None = None) -> int:
    """Give torch one intra-op thread on a machine without CUDA, or ``RLA_TORCH_THREADS`` when set; returns the count.

    The tiny CPU models run ~10x slower on two threads than on one (DESIGN.md), and two processes with two threads
    each on a 2-core machine oversubscribe it: the ablation ran its per-seed processes so before this was called
    there. With CUDA and no ``RLA_TORCH_THREADS``, torch's own choice stands. Imports torch.
    """
    import torch

    environ = os.environ if environ is None else environ
    if "RLA_TORCH_THREADS" in environ:
        torch.set_num_threads(int(environ["RLA_TORCH_THREADS"]))
    elif not torch.cuda.is_available():
        torch.set_num_threads(1)
    return torch.get_num_threads()
