"""The machine's CPU as the kernels see it: its name, vendor and instruction-set flags.

oneDNN, which TensorFlow's CPU kernels call, picks its matrix kernels by these flags: bfloat16
products are fast only with AMX (`amx_bf16`) or, on AMD, `avx512_bf16`; int8 ones need VNNI
or AMX (`amx_int8`). `zoo export` reads them to warn before serving bfloat16 where it is
slower (`zoo.export.dtype`). Linux only (/proc/cpuinfo); elsewhere the flags are unknown.
"""

import platform
import typing

CPUINFO = "/proc/cpuinfo"


class CPU(typing.NamedTuple):
    """What /proc/cpuinfo says of the CPU (`cpu()`)."""

    name: str  # its model name ("Intel(R) Xeon(R) Platinum 8480+"), or what `platform` says
    vendor: str  # "GenuineIntel", "AuthenticAMD", ...; "" unknown
    flags: frozenset  # x86 instruction-set flags; None unknown (not Linux, or not x86)


def cpu(path=CPUINFO):
    """The `CPU` (name, vendor, flags) from /proc/cpuinfo's first processor.

    `flags` is None where they cannot be read: no /proc/cpuinfo (not Linux), or a CPU whose
    cpuinfo has no `flags` line (Arm lists `Features`, with other names).

    Examples:
        >>> name, vendor, flags = cpu()
        >>> flags is None or "fpu" in flags
        True
    """

    name, vendor, flags = platform.processor() or platform.machine(), "", None
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                key, _, value = (part.strip() for part in line.partition(":"))
                if not key and flags is not None:
                    break  # the first processor's block has ended
                if key == "model name":
                    name = value
                elif key == "vendor_id":
                    vendor = value
                elif key == "flags":
                    flags = frozenset(value.split())
    except OSError:
        pass
    return CPU(name, vendor, flags)


__all__ = ["CPU", "cpu"]
