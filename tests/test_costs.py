"""python -m benchmark.costs device-check: the reference's rows beside the lab's, CPU and --cuda side by side."""

import re

import torch

from benchmark import costs


def training_lines(out: str) -> list:
    """device-check's training rows as (trainer, hidden, [the steps/s figures], ratio or None)."""
    found = []
    for line in out.splitlines():
        match = re.match(
            r"\s+(lab trainer|smac_a2c\.py)\s+(\d+-\d+)\s+cpu\s+(\d+)(?:\s+--cuda\s+(\d+)\D+([\d.]+)x)?$",
            line,
        )
        if match:
            figures = [float(x) for x in match.group(3, 4) if x is not None]
            ratio = float(match.group(5)) if match.group(5) else None
            found.append((match.group(1), match.group(2), figures, ratio))
    return found


def test_device_check_rows_put_the_reference_beside_the_lab():
    assert costs.device_check_rows(True) == [
        ("lab trainer", (64, 64), (False, True)),
        ("smac_a2c.py", (64, 64), (False, True)),
        ("smac_a2c.py", (1024, 1024), (False, True)),
    ]
    assert [devices for *_, devices in costs.device_check_rows(False)] == [(False,)] * 3


def test_device_check_prints_cpu_and_cuda_side_by_side_with_their_ratio(monkeypatch, capsys):
    measured = {(64, False): 2883.0, (64, True): 1291.0, (1024, False): 1020.0, (1024, True): 1386.0}
    calls = []

    def fake_trainer(steps, runs_dir, hidden, cuda):
        calls.append((steps, hidden, cuda))
        return measured[(hidden[0], cuda)]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(costs, "DEVICE_TRAINERS", {"lab trainer": fake_trainer, "smac_a2c.py": fake_trainer})
    costs.device_training(20_000)
    assert training_lines(capsys.readouterr().out) == [
        ("lab trainer", "64-64", [2883.0, 1291.0], 0.45),
        ("smac_a2c.py", "64-64", [2883.0, 1291.0], 0.45),
        ("smac_a2c.py", "1024-1024", [1020.0, 1386.0], 1.36),
    ]
    assert calls == [(20_000, (w, w), cuda) for w in (64, 64, 1024) for cuda in (False, True)]


def test_device_check_without_cuda_runs_the_cpu_rows_and_skips_the_cuda_ones_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    costs.main(["device-check", "--steps", "1000", "--update-widths"])
    out = capsys.readouterr().out
    rows = training_lines(out)
    assert [(trainer, hidden) for trainer, hidden, *_ in rows] == [
        ("lab trainer", "64-64"),
        ("smac_a2c.py", "64-64"),
        ("smac_a2c.py", "1024-1024"),
    ]
    assert all(len(figures) == 1 and figures[0] > 0 and ratio is None for *_, figures, ratio in rows)
    lines = (
        out.splitlines()
    )  # the GPU line, the rows' heading, the three rows and one line for the --cuda runs
    assert len(lines) == 6 and "--cuda" in lines[-1] and not training_lines(lines[-1]), out


def test_throughputs_microbenchmark_runs_the_reference_steps_on_a_reference_actor():
    """`python -m benchmark.costs throughput` timed the reference's actor steps on the lab's Actor, whose forward()
    gives a tensor, not a distribution: an AttributeError once the reference's Actor changed. Each reference step now
    runs on a reference Actor holding the lab actor's weights, and gives the reference's numbers there."""
    import smac_a2c
    from benchmark import trainer

    steps = {
        "smac": costs.reference_step(smac_a2c.smac_batch_mean_step),
        "smac fast path": trainer.smac_step,
        "sgd": costs.reference_step(smac_a2c.sgd_step),
    }
    ms = costs.update_ms(steps, width=8, T=50, repeats=2, warmup=0)
    assert set(ms) == set(steps) and all(0 < v < float("inf") for v in ms.values())
    actor, batch = costs.setup(8, 50, "cpu")
    twin = smac_a2c.Actor(costs.OBS_DIM, costs.ACT_DIM, False, (8, 8))
    twin.load_state_dict(actor.state_dict())
    args = trainer.Args(learning_rate=1e-6)
    diag = costs.reference_step(smac_a2c.sgd_step)(actor, batch, args, {})
    expected = torch.cat(
        [
            g.reshape(-1)
            for g in torch.autograd.grad(
                (twin(batch["obs"]).log_prob(batch["actions"]) * batch["advantages"]).mean(),
                list(twin.parameters()),
            )
        ]
    )
    torch.testing.assert_close(diag["g"], expected)
