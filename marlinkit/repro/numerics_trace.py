"""Record every intermediate tensor of a short MADDPG training, hashed and in order, and compare with a fixture.

Made on one processor and recomputed on another, a trace names the first operation whose last bits depend on the
machine: ``update 2, operation 57 (aten.log.default)``. Each of :data:`UPDATES` MADDPG updates of a small learner
(4 agents, 6 observations, 4 actions, 16 hidden units, batches of 64) is recorded through a torch dispatch mode, which
sees every ATen operation, the backward pass and the optimizer step included; after each update the parameters and
Adam's moments are hashed by name. The paper's MADDPG with both product routes (MKL and OpenBLAS) and the
parameter-shared MADDPG are traced (:data:`VARIANTS`): a few seconds in all.

``python -m marlinkit numerics-trace`` compares this machine with every committed fixture, and with ``--write``
records one for this machine's processor (``tests/algos/fixtures/maddpg_trace/``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from marlinkit import paths
from marlinkit.repro import numerics

#: Where the committed traces lie, one file per processor model that made one.
FIXTURES = paths.REPO_ROOT / "tests" / "algos" / "fixtures" / "maddpg_trace"
#: MADDPG updates recorded per product route.
UPDATES = 3
_SHAPE = {"n_agents": 4, "obs_dim": 6, "n_actions": 4, "hidden": 16, "batch": 64, "buffer": 256}


def _digest(value) -> str:
    import torch

    if not isinstance(value, torch.Tensor):  # a number of an optimizer's state: its exact text
        return repr(value)
    tensor = value.detach()
    payload = tensor.numpy().tobytes() if tensor.numel() else b""  # in C order, whatever the strides
    return hashlib.sha256(f"{tensor.dtype}{tuple(tensor.shape)}".encode() + payload).hexdigest()[:16]


def _recorder(entries: list[list[Any]], update: list[int]):
    """A dispatch mode appending [update, operation, hash of each tensor output] for every ATen call; for a call that
    returns nothing (in place on lists of tensors: Adam's fused step), the hashes of its tensor arguments after it."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode  # the documented extension point for this

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            outputs = out if isinstance(out, (tuple, list)) else (out,)
            if not any(isinstance(t, torch.Tensor) for t in outputs):
                outputs = [t for a in args for t in (a if isinstance(a, (tuple, list)) else (a,))]
            hashes = [_digest(t) for t in outputs if isinstance(t, torch.Tensor)]
            if "empty" in func.__name__:  # uninitialised memory: only its shape and dtype mean anything
                hashes = [f"{t.dtype}{tuple(t.shape)}" for t in outputs if isinstance(t, torch.Tensor)]
            if hashes:
                entries.append([update[0], str(func), *hashes])
            return out

    return Recorder()


#: The learners traced: the paper's MADDPG with either product route, and the parameter-shared one.
VARIANTS = {"torch": {"products": "torch"}, "openblas": {"products": "openblas"},
            "shared-local": {"sharing": "shared-local", "products": "openblas"}}


def trace(variant: str) -> list[list[Any]]:
    """[update, operation, output hashes...] for every ATen call of :data:`UPDATES` updates of ``variant`` (a key of
    :data:`VARIANTS`), then [update, "state:<name>", hash] for every parameter and Adam moment after each update."""
    import numpy as np

    from marlinkit.algos import maddpg
    from marlinkit.algos.replay_buffer import ReplayBuffer

    s = _SHAPE
    config = maddpg.MADDPGConfig(seed=7, hidden=s["hidden"], batch_size=s["batch"], buffer_size=s["buffer"],
                                 **VARIANTS[variant])
    learner = maddpg.make_learner(s["n_agents"], s["obs_dim"], s["n_actions"], config)
    rng = np.random.default_rng(7)
    buffer = ReplayBuffer(s["buffer"], s["n_agents"], s["obs_dim"])
    for _ in range(s["buffer"]):
        buffer.add(rng.normal(size=(s["n_agents"], s["obs_dim"])), rng.integers(s["n_actions"], size=s["n_agents"]),
                   rng.normal(size=s["n_agents"]), rng.normal(size=(s["n_agents"], s["obs_dim"])),
                   rng.random(s["n_agents"]) < 0.05)
    entries: list[list[Any]] = []
    update = [0]
    for update[0] in range(UPDATES):
        batch = learner.sample([buffer], s["batch"])
        with _recorder(entries, update):
            learner.update(batch, learner.noise(s["batch"]))
        for name, opt in (("actor_opt", learner.actor_opt), ("critic_opt", learner.critic_opt)):
            for k, state in enumerate(opt.state.values()):
                entries += [[update[0], f"state:{name}.{k}.{key}", _digest(v)] for key, v in sorted(state.items())]
        for net in ("actor", "critic", "target_actor", "target_critic"):
            entries += [[update[0], f"state:{net}.{name}", _digest(p)]
                        for name, p in getattr(learner, net).named_parameters()]
    return entries


def record() -> dict[str, Any]:
    """This machine's traces of both product routes, with what made them."""
    import numpy
    import torch

    state = numerics.check_pinned()
    return {"cpu": numerics.cpu_model(), "vendor": numerics.cpu_vendor(), "numerics": state,
            "versions": {"torch": torch.__version__, "numpy": numpy.__version__},
            "traces": {variant: trace(variant) for variant in VARIANTS}}


def first_difference(expected: dict[str, Any], got: dict[str, Any]) -> str | None:
    """None when ``got``'s traces equal ``expected``'s; else which learner, update and operation first differs,
    and on which processors each trace was made."""
    if expected["versions"] != got["versions"]:
        return (f"the fixture was made with {expected['versions']}, this machine runs {got['versions']}: "
                "regenerate it with `python -m marlinkit numerics-trace --write`")
    for variant, old in expected["traces"].items():
        new = got["traces"].get(variant, [])
        for index, (a, b) in enumerate(zip(old, new)):
            if a != b:
                return (f"{variant}: update {a[0]}, operation {index} ({a[1]}) differs from the fixture "
                        f"made on {expected['cpu']} ({expected['vendor']}); recomputed on {got['cpu']} "
                        f"({got['vendor']}) as {b[1]}")
        if len(old) != len(new):
            return f"{variant}: {len(old)} operations in the fixture, {len(new)} recomputed"
    return None


def fixture_path(cpu: str) -> Path:
    """The fixture file of processor model ``cpu``."""
    return FIXTURES / (re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") + ".json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--write", action="store_true", help="record this processor's fixture (replacing its own)")


def command(args: argparse.Namespace) -> dict[str, Any]:
    """Trace MADDPG's operations on this machine and compare with every committed fixture (``--write``: record)."""
    got = record()
    if args.write:
        path = fixture_path(got["cpu"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    fixtures = sorted(FIXTURES.glob("*.json"))
    if not fixtures:
        raise FileNotFoundError(f"no committed MADDPG trace under {FIXTURES}")
    results = {}
    for path in fixtures:
        expected = json.loads(path.read_text(encoding="utf-8"))
        results[expected["cpu"]] = first_difference(expected, got) or "same"
    return {"cpu": got["cpu"], "operations": sum(len(t) for t in got["traces"].values()), "fixtures": results,
            "exit_code": 0 if all(v == "same" for v in results.values()) else 1}
