"""Compares two parameter files written by `burst train --save-params` (torch.load reads
them): same names and shapes, and every value within a relative tolerance of the reference.

usage: compare_params.py REFERENCE OTHER [TOLERANCE] [--elementwise]; exit 0 when equal
within tolerance. Or compare_params.py --many REFERENCE TOLERANCE NAME=OTHER... [--elementwise]:
every OTHER against REFERENCE in one process (torch loads once), a line "ok: NAME: ..." or
"FAIL: NAME: ..." each; exit 0 when all are equal. The error of a tensor is max|a - b| / max(max|a|, 1e-12): relative to the
tensor's scale, so entries that happen to be near zero do not inflate it. With
--elementwise it is max(|a - b| / (1 + |a|)) instead: relative for large values, absolute
for small ones, for models whose tensors can be all but zero as a whole (a BatchNorm bias
followed by a convolution and another BatchNorm gets an exactly zero gradient, so it holds
nothing but rounding noise)."""
import sys

import torch


def main() -> int:
    elementwise = "--elementwise" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--elementwise"]
    if args and args[0] == "--many":
        reference, tolerance = torch.load(args[1]), float(args[2])
        failed = 0
        for pair in args[3:]:
            name, path = pair.split("=", 1)
            line, equal = compare(reference, torch.load(path), tolerance, elementwise)
            print(f"{'ok' if equal else 'FAIL'}: {name}: {line}")
            failed += 0 if equal else 1
        return 1 if failed else 0
    tolerance = float(args[2]) if len(args) > 2 else 1e-5
    line, equal = compare(torch.load(args[0]), torch.load(args[1]), tolerance, elementwise)
    print(line)
    return 0 if equal else 1


def compare(reference, other, tolerance, elementwise):
    """(the verdict line, whether every tensor is within tolerance)."""
    if sorted(reference) != sorted(other):
        return f"different parameter names: {sorted(set(reference) ^ set(other))}", False
    worst_name, worst = "", 0.0
    for name, a in reference.items():
        b = other[name]
        if a.shape != b.shape:
            return f"{name}: shape {tuple(a.shape)} vs {tuple(b.shape)}", False
        if not a.is_floating_point():
            if not torch.equal(a, b):
                return f"{name}: integer values differ", False
            continue
        if elementwise:
            error = ((a - b).abs() / (1 + a.abs())).max().item()
        else:
            error = (a - b).abs().max().item() / max(a.abs().max().item(), 1e-12)
        if error > worst:
            worst_name, worst = name, error
    verdict = "equal" if worst <= tolerance else "DIFFERENT"
    return (f"{verdict}: {len(reference)} tensors, largest relative error {worst:.3g} ({worst_name or '-'}), "
            f"tolerance {tolerance:g}"), worst <= tolerance


if __name__ == "__main__":
    sys.exit(main())
