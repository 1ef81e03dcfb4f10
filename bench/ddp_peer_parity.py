#!/usr/bin/env python3
"""Checks that bench/ddp_peer.py computes what burst train computes, for one model file:
from the same initial weights, on burst's own first synthetic batch, step 1's loss and every
parameter's gradient, on 1 rank and on 2 ranks with local BatchNorm (how DDP normalises).

    .venv/bin/python bench/ddp_peer_parity.py tests/runtime/resnet_like.json [BURST]

How: `burst train --global-batch 16 --steps 1 --threads 1 --save-params` three times, on a
copy of the model with every dropout p = 0 (masks cannot match): at lr 1e-30 (the file holds
the initial weights: the peer's --init) and at lr 1000 on 1 and on 2 ranks
(`--batchnorm local`), whose gradient is (before - after) / 1000. The batch is recomputed from
lib/data's recipe (SplitMix64: synthetic.cpp, sampler.cpp; default 4096 samples, seed 0).
The peer's loss is the local mean on each rank and the gradients are averaged over the ranks,
as DDP does. Prints one line per rank count; exit 1 when a loss differs in burst's 6 printed
decimals or a gradient by more than 1e-3 relative to its tensor's largest entry (the
recovered gradient carries float32 rounding of the weights / 1000: a tensor whose gradient
is ~0, such as a conv bias before BatchNorm, shows the largest relative error).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_peer  # noqa: E402

MASK = (1 << 64) - 1
PROTOTYPE_STREAM, SAMPLE_STREAM, SHUFFLE_STREAM = 0x70726F746F747970, 0x73616D706C657321, 0x73687566666C6521


def mix64(v):
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & MASK
    return v ^ (v >> 31)


def derive_seed(seed, stream):
    return mix64(seed ^ mix64((stream + 0x632BE59BD9B4E019) & MASK))


class SplitMix64:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        return mix64(self.state)

    def below(self, bound):
        rejected = ((1 << 64) - bound) % bound
        while True:
            value = self.next()
            if value >= rejected:
                return value % bound

    def unit_floats(self, count):
        return torch.tensor([(self.next() >> 40) * 2.0 ** -24 for _ in range(count)], dtype=torch.float32)


def burst_batch(shape, classes, batch, seed=0, samples=4096):
    """Global batch 0 of epoch 0 of burst's synthetic dataset: features [batch] + shape, labels."""
    elements = 1
    for extent in shape:
        elements *= extent
    prototypes = [SplitMix64(derive_seed(seed ^ PROTOTYPE_STREAM, c)).unit_floats(elements) for c in range(classes)]
    random = SplitMix64(derive_seed(seed ^ SHUFFLE_STREAM, 0))
    order = list(range(samples))
    for i in range(samples - 1, 0, -1):
        j = random.below(i + 1)
        order[i], order[j] = order[j], order[i]
    features, labels = [], []
    for index in order[:batch]:
        random = SplitMix64(derive_seed(seed ^ SAMPLE_STREAM, index))
        label = random.below(classes)
        features.append(((prototypes[label] + random.unit_floats(elements)) * 0.5).view(shape))
        labels.append(label)
    return torch.stack(features), torch.tensor(labels)


def burst_step(burst, model, out, lr, extra=()):
    """One step of burst train; (its saved parameters, its logged loss)."""
    run = subprocess.run([burst, "train", "--model", model, "--global-batch", "16", "--steps", "1", "--lr", str(lr),
                          "--threads", "1", "--save-params", out, *extra], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"burst train failed: {run.stderr.strip() or run.stdout.strip()}")
    return torch.load(out), float(re.search(r"step\s+1\s+loss\s+([-0-9.e]+)", run.stdout).group(1))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    burst = sys.argv[2] if len(sys.argv) == 3 else os.path.join(root, "build/release/apps/burst/burst")
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    for layer in doc["layers"]:
        if layer.get("op") == "dropout":
            layer["p"] = 0.0
    failed = False
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "model.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        initial, _ = burst_step(burst, path, os.path.join(work, "p0.pt"), 1e-30)
        name, layers = ddp_peer.read_model(path)
        model = ddp_peer.BurstModel(name, layers)
        x, y = burst_batch(model._burst_input.attrs["shape"], model._burst_logits_shape[-1], 16)
        for ranks, extra in ((1, ()), (2, ("--nproc", "2", "--batchnorm", "local"))):
            after, burst_loss = burst_step(burst, path, os.path.join(work, f"p{ranks}.pt"), 1000.0, extra)
            model.load_state_dict(initial)
            model.zero_grad()
            loss = 0.0
            for part_x, part_y in zip(x.chunk(ranks), y.chunk(ranks)):
                local = model(part_x, part_y).mean() / ranks
                local.backward()
                loss += local.item()
            worst, where = 0.0, "-"
            for key, p in model.named_parameters():
                reference = (initial[key] - after[key]) / 1000.0
                error = (p.grad - reference).abs().max().item() / max(reference.abs().max().item(), 1e-12)
                if error > worst:
                    worst, where = error, f"{key}, largest |gradient| {reference.abs().max().item():.1e}"
            ok = f"{loss:.6f}" == f"{burst_loss:.6f}" and worst <= 1e-3
            failed |= not ok
            print(f"parity {'ok' if ok else 'FAILED'}: {name}, {ranks} rank{'s' if ranks > 1 else ''}{', local BN' if ranks > 1 else ''}: "
                  f"step-1 loss {loss:.6f} (burst {burst_loss:.6f}), gradients: largest relative error "
                  f"{worst:.2g} ({where})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
