"""Parity of an imported torchvision model with PyTorch itself (docs/model-import.md).

usage: .venv/bin/python tests/onnx/check_parity.py BURST MODEL [--image-size N] [--batch B] [--onnx FILE]

Exports MODEL (weights=None, seed 0, dropout 0: burst's dropout draws other masks than
torch's) with tests/onnx/export_torchvision.py's command, or takes FILE, which
export_torchvision.py wrote for a model without dropout (the same file), then
  1. `burst train --model MODEL.onnx --steps 1` on one process, from the file's weights, on
     burst's synthetic dataset of exactly B samples (step 1 sees all of them), SGD lr 0.01;
  2. the same step in PyTorch: the model loaded from the ONNX initializers by name
     (load_state_dict, strict), the same B samples regenerated here bit for bit
     (SplitMix64, docs/runtime.md), mean cross-entropy, one SGD step;
and checks the first step's loss within 1e-5 relative and every parameter and BatchNorm
buffer burst saved within 1e-5 (absolute + relative) of PyTorch's. Exit 1 on a mismatch.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision  # noqa: E402

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
PROTOTYPE_STREAM = 0x70726F746F747970
SAMPLE_STREAM = 0x73616D706C657321


def mix64(value):
    value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9 & MASK
    value = (value ^ (value >> 27)) * 0x94D049BB133111EB & MASK
    return value ^ (value >> 31)


def mix64_array(values):
    with np.errstate(over="ignore"):
        values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return values ^ (values >> np.uint64(31))


def derive_seed(seed, stream):
    return mix64(seed ^ mix64((stream + 0x632BE59BD9B4E019) & MASK))


def unit_floats(state, first_draw, count):
    """Draws first_draw+1 .. first_draw+count of SplitMix64(state), as unit_float()."""
    steps = np.arange(first_draw + 1, first_draw + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        states = np.uint64(state) + steps * np.uint64(GOLDEN)
    return (mix64_array(states) >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)


def below(state, bound):
    """SplitMix64(state).below(bound) and how many draws it took."""
    return below_from(state, bound, 0)


def synthetic(samples, shape, classes, seed=0):
    """burst's synthetic_dataset (lib/data/src/synthetic.cpp), bit for bit."""
    elements = int(np.prod(shape))
    prototypes = [unit_floats(derive_seed(seed ^ PROTOTYPE_STREAM, c), 0, elements) for c in range(classes)]
    features, labels = [], []
    for i in range(samples):
        state = derive_seed(seed ^ SAMPLE_STREAM, i)
        label, draws = below(state, classes)
        labels.append(label)
        features.append((prototypes[label] + unit_floats(state, draws, elements)) * np.float32(0.5))
    return (torch.from_numpy(np.stack(features).reshape(samples, *shape)),
            torch.tensor(labels, dtype=torch.int64))


def synthetic_tokens(samples, tokens, vocab, seed=0):
    """burst's synthetic token walks (synthetic_tokens in lib/data/src/synthetic.cpp), bit for
    bit: ids s_0 .. s_{T-1} and next-token labels s_1 .. s_T, s_{t+1} = s_t + 1 + (0 or 1)."""
    ids, labels = [], []
    for i in range(samples):
        state, draws = derive_seed(seed ^ SAMPLE_STREAM, i), 0
        token, used = below_from(state, vocab, draws)
        draws += used
        walk = [token]
        for _ in range(tokens):
            step, used = below_from(state, 2, draws)
            draws += used
            walk.append((walk[-1] + 1 + step) % vocab)
        ids.append(walk[:-1])
        labels.append(walk[1:])
    return torch.tensor(ids, dtype=torch.int64), torch.tensor(labels, dtype=torch.int64)


def below_from(state, bound, draws_before):
    """SplitMix64(state).below(bound) after `draws_before` draws, and how many draws it took."""
    rejected_below = ((1 << 64) - bound) % bound
    draws = 0
    while True:
        draws += 1
        value = mix64((state + (draws_before + draws) * GOLDEN) & MASK)
        if value >= rejected_below:
            return value % bound, draws


def burst_step(burst, onnx_path, batch, work, dtype):
    params = os.path.join(work, "params.pt")
    out = subprocess.run([burst, "train", "--model", onnx_path, "--global-batch", str(batch),
                          "--synthetic-samples", str(batch), "--steps", "1", "--lr", "0.01",
                          "--save-params", params, "--dtype", dtype], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"burst train failed ({out.returncode}): {out.stderr.strip()}")
    loss = float(re.search(r"step\s+1\s+loss\s+(\S+)", out.stdout).group(1))
    return loss, torch.load(params)


# Kept whole (about 65 lines): one model after another, exported, imported, run by both
# sides and compared, in the order its report lines print.
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("burst")
    parser.add_argument("model")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                        help="float64: both sides in double (the float32 weights widened)")
    parser.add_argument("--onnx", help="export_torchvision.py's file of MODEL, which has no dropout")
    args = parser.parse_args()
    # One intra-op thread, as burst train's default (--threads 1): the same kernels then sum
    # in the same order on both sides. With torch's default (a thread a core) resnet50's
    # conv1.weight differed by 6.1e-3 after one float32 step here, by 2.1e-6 with one.
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        model = export_torchvision.build(args.model, dropout=0.0)
        if args.onnx:
            path = args.onnx
        else:
            path = export_torchvision.export_model(model, args.model, work, args.image_size)
        state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                 for t in onnx.load(path).graph.initializer}
        # The file's weights are the model's own, under its state_dict names.
        model.load_state_dict({k: v for k, v in state.items() if k in model.state_dict()}, strict=False)
        missing = [k for k, _ in model.named_parameters() if k not in state]
        if missing:
            sys.exit(f"{args.model}: parameters not in the ONNX file by name: {missing[:5]}")
        burst_loss, burst_state = burst_step(args.burst, path, args.batch, work, args.dtype)

    model.train()
    kind, shape, vocab = export_torchvision.input_spec(model, args.image_size)
    if kind == "tokens":
        x, y = synthetic_tokens(args.batch, shape[0], vocab)
        output = export_torchvision.output_shape(model, args.image_size)
        if len(output) == 1:  # a sequence classifier: one label a sample, the first id mod the classes
            y = x[:, 0] % output[0]
    else:
        x, y = synthetic(args.batch, shape, export_torchvision.output_shape(model, args.image_size)[0])
    if args.dtype == "float64":
        model.double()
        x = x if kind == "tokens" else x.double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    optimizer.step()
    torch_state = model.state_dict()

    failures = []
    loss_error = abs(burst_loss - loss.item()) / abs(loss.item())
    if loss_error > 1e-5:
        failures.append(f"loss {burst_loss} vs PyTorch's {loss.item()} (relative {loss_error:.2e})")
    worst, worst_name, compared = 0.0, "", 0
    for name, value in burst_state.items():
        if name not in torch_state or not value.is_floating_point():
            continue
        reference = torch_state[name]
        if value.shape != reference.shape:
            failures.append(f"{name}: shape {list(value.shape)} vs PyTorch's {list(reference.shape)}")
            continue
        error = ((value - reference).abs() / (1 + reference.abs())).max().item()
        if os.environ.get("PARITY_VERBOSE") and error > 1e-5:
            print(f"  {name}: {error:.2e}")
        compared += 1
        if error > worst:
            worst, worst_name = error, name
    if compared < len(list(model.parameters())):
        failures.append(f"only {compared} of burst's tensors match PyTorch's names")
    if worst > 1e-5:
        failures.append(f"{worst_name} differs by {worst:.2e} after one step")
    print(f"{args.model}: loss {burst_loss:.6f} vs {loss.item():.6f} (relative {loss_error:.1e}); "
          f"{compared} tensors after one SGD step, worst |difference|/(1+|value|) {worst:.1e} ({worst_name})")
    if failures:
        print("MISMATCH: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
