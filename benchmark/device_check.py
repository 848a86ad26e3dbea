"""CPU versus CUDA for smac_a2c.py's small networks, in one run (needs a GPU for the CUDA rows).

    python benchmark/device_check.py

Prints training steps/s on Hopper-v4 with and without --cuda, and the time of one actor
update (T=1000) for smac batch-mean and sgd on each device for a few hidden widths.
"""

import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmark import trainer as sa  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def update_ms(device, hidden, T=1000, repeats=50):
    actor = sa.Actor(11, 3, False, hidden).to(device)
    batch = {"obs": torch.randn(T, 11, device=device), "actions": torch.randn(T, 3, device=device),
             "advantages": torch.randn(T, device=device)}
    args, out = sa.Args(learning_rate=1e-6), {}
    for name in ("smac", "sgd"):
        times = []
        for i in range(repeats + 10):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            sa.ACTOR_STEPS[name](actor, batch, args, {})
            if device.type == "cuda":
                torch.cuda.synchronize()
            if i >= 10:
                times.append((time.perf_counter() - start) * 1e3)
        out[name] = statistics.median(times)
    return out


def main():
    torch.set_num_threads(1)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print("GPU:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
    with tempfile.TemporaryDirectory() as tmp:
        for cuda in ([False, True] if len(devices) > 1 else [False]):
            args = sa.Args(env_id="Hopper-v4", total_timesteps=30_000, cuda=cuda, tensorboard=False,
                           runs_dir=tmp)
            sa.train(sa.Args(**{**args.__dict__, "total_timesteps": 2000}))  # warm-up
            start = time.perf_counter()
            sa.train(args)
            print(f"training Hopper-v4 smac, {'cuda' if cuda else 'cpu '}: {30_000 / (time.perf_counter() - start):7.0f} steps/s")
    for hidden in [(64, 64), (256, 256), (1024, 1024), (2048, 2048)]:
        for device in devices:
            ms = update_ms(device, hidden)
            print(f"actor update T=1000 hidden={hidden} {device.type:4s}: smac {ms['smac']:7.2f} ms  "
                  f"sgd {ms['sgd']:7.2f} ms  ratio {ms['smac'] / ms['sgd']:.2f}")


if __name__ == "__main__":
    main()
