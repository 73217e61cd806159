"""MADDPG: pure helpers by hand, batched == per-agent loop, seeding, and learning on a real small env."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test

from marlinkit.algos import maddpg, maddpg_ops
from marlinkit.algos.maddpg import MADDPGConfig
from marlinkit.algos.replay_buffer import ReplayBuffer
from marlinkit.algos.stacked_mlp import StackedMLP
from marlinkit.repro import keys


class SignalMatchEnv(ParallelEnv):
    """Cooperative signal matching: each step every agent sees the one-hot of one shared signal
    (k in 0..3, redrawn each step) and the team earns the fraction of agents whose action equals it.

    Random play earns 0.25 per step (2.0 per 8-step episode); the best joint policy 1.0 (8.0).
    """

    metadata = {"name": "signal_match_v0"}

    def __init__(self, n_agents: int = 3, n_signals: int = 4, length: int = 8):
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.agents = []
        self.n_signals, self.length = n_signals, length
        self._obs_space = spaces.Box(0.0, 1.0, shape=(n_signals,), dtype=np.float32)
        self._act_space = spaces.Discrete(n_signals)
        self._rng = np.random.default_rng()

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observe(self):
        one_hot = np.eye(self.n_signals, dtype=np.float32)[self.signal]
        return {a: one_hot.copy() for a in self.agents}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        self.signal = int(self._rng.integers(self.n_signals))
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        team = float(np.mean([actions[a] == self.signal for a in self.agents]))
        self.t += 1
        self.signal = int(self._rng.integers(self.n_signals))
        obs, done = self._observe(), self.t >= self.length
        rewards = {a: team for a in self.agents}
        terminations = {a: False for a in self.agents}
        truncations = {a: done for a in self.agents}
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terminations, truncations, infos


SMALL = dict(hidden=32, batch_size=64, buffer_size=5000, learning_starts=64, update_every=1)


def test_fixture_env_is_a_conforming_parallel_env():
    parallel_api_test(SignalMatchEnv(), num_cycles=50)


def test_gumbel_softmax_hard_is_one_hot_with_soft_gradient():
    logits = torch.tensor([[1.0, 2.0, 0.5]], requires_grad=True)
    gumbels = torch.tensor([[0.3, -0.2, 2.0]])
    hard = maddpg_ops.gumbel_softmax(logits, gumbels, temperature=0.5)
    assert hard.tolist() == [[0.0, 0.0, 1.0]]  # argmax of (1.3, 1.8, 2.5)
    weights = torch.tensor([1.0, -2.0, 3.0])
    (hard * weights).sum().backward()
    straight_through = logits.grad.clone()
    logits.grad = None
    soft = maddpg_ops.gumbel_softmax(logits, gumbels, temperature=0.5, hard=False)
    expected = torch.softmax(torch.tensor([1.3, 1.8, 2.5]) / 0.5, -1)
    torch.testing.assert_close(soft.detach()[0], expected)
    (soft * weights).sum().backward()
    torch.testing.assert_close(straight_through, logits.grad)


def test_gumbel_noise_is_seeded_and_gumbel_distributed():
    g = maddpg_ops.sample_gumbel((200_000,), torch.Generator().manual_seed(0))
    torch.testing.assert_close(g, maddpg_ops.sample_gumbel((200_000,), torch.Generator().manual_seed(0)))
    assert g.mean().item() == pytest.approx(0.5772, abs=0.01)  # Euler-Mascheroni constant
    assert g.var().item() == pytest.approx(np.pi**2 / 6, abs=0.02)


def test_soft_update_and_critic_target_hand_values():
    source, target = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    with torch.no_grad():
        source.weight.fill_(2.0), source.bias.fill_(4.0), target.weight.fill_(0.0), target.bias.fill_(1.0)
    maddpg_ops.soft_update(target, source, tau=0.25)
    assert target.weight.item() == pytest.approx(0.5) and target.bias.item() == pytest.approx(1.75)
    y = maddpg_ops.critic_target(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]), torch.tensor([10.0, 10.0]), 0.9)
    assert y.tolist() == pytest.approx([10.0, 2.0])


def test_substitute_own_action_replaces_only_the_diagonal():
    buffer = torch.arange(2 * 3 * 2, dtype=torch.float32).reshape(2, 3, 2)  # (B=2, N=3, A=2)
    policy = -torch.ones(3, 2, 2)  # (N, B, A)
    joint = maddpg_ops.substitute_own_action(buffer, policy)
    for i in range(3):
        for j in range(3):
            expected = policy[i] if i == j else buffer[:, j]
            torch.testing.assert_close(joint[i, :, j], expected)


def test_clip_grad_norm_per_agent_scales_each_agent_alone():
    w = torch.zeros(2, 3, requires_grad=True)
    w.grad = torch.tensor([[3.0, 4.0, 0.0], [0.1, 0.0, 0.0]])
    norms = maddpg_ops.clip_grad_norm_per_agent([w], max_norm=1.0)
    assert norms.tolist() == pytest.approx([5.0, 0.1])
    torch.testing.assert_close(w.grad, torch.tensor([[0.6, 0.8, 0.0], [0.1, 0.0, 0.0]]), atol=1e-5, rtol=0)


def test_stacked_mlp_agent_slices_are_independent_networks():
    net = StackedMLP(3, [4, 5, 2])
    x = torch.randn(3, 7, 4)
    out = net(x)
    for i in range(3):
        linear = torch.relu(x[i] @ net.weights[0][i] + net.biases[0][i]) @ net.weights[1][i] + net.biases[1][i]
        torch.testing.assert_close(out[i], linear)
    torch.testing.assert_close(net.run(x, "loop"), out)


def test_shared_input_forward_equals_the_expanded_input():
    net = StackedMLP(3, [6, 5, 2])
    x = torch.randn(7, 6)
    torch.testing.assert_close(net(x), net(x.expand(3, -1, -1)), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(net.run(x, "loop"), net(x), atol=1e-6, rtol=1e-6)


def test_own_action_layer_gives_autograd_gradient_of_the_own_action_only():
    """The critic's first layer differentiated in each agent's own action: autograd's values on the full input."""
    n, obs, a, batch = 3, 5, 4, 8
    net = StackedMLP(n, [n * (obs + a), 6, 1]).requires_grad_(False)
    flat_obs, actions = torch.randn(batch, n * obs), torch.randn(batch, n, a)
    policy = torch.randn(n, batch, a, requires_grad=True)
    q_in = torch.cat([flat_obs.expand(n, -1, -1),
                      maddpg_ops.substitute_own_action(actions, policy).reshape(n, batch, -1)], -1)
    net(q_in).sum().backward()
    reference, policy.grad = policy.grad.clone(), None
    q_in = q_in.detach()
    out = net(q_in, own_actions=(policy, n * obs, n))
    out.sum().backward()
    torch.testing.assert_close(out, net(q_in))
    torch.testing.assert_close(policy.grad, reference, atol=1e-6, rtol=1e-6)
    assert policy.grad.abs().sum() > 0
    net.requires_grad_(True)  # a critic that is not frozen would lose its weight gradient: refused
    with pytest.raises(RuntimeError, match="freeze the critic"):
        net(q_in, own_actions=(policy, n * obs, n)).sum().backward()


def _random_batch(n_agents=4, obs_dim=5, n_actions=4, size=32, seed=0):
    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(100, n_agents, obs_dim)
    for _ in range(100):
        buffer.add(rng.normal(size=(n_agents, obs_dim)), rng.integers(n_actions, size=n_agents),
                   rng.normal(size=n_agents), rng.normal(size=(n_agents, obs_dim)), rng.random(n_agents) < 0.1)
    return buffer.sample(size, rng)


PARITY = MADDPGConfig(hidden=16, batch_size=32, buffer_size=100)
NETS = ("actor", "critic", "target_actor", "target_critic")


def _three_updates(configs: dict[str, MADDPGConfig]):
    """A learner per path ("batched", "loop") and configuration, three updates on the same batches and noise."""
    learners = {mode: maddpg.MADDPG(4, 5, 4, config) for mode, config in configs.items()}
    losses = []
    for step in range(3):
        batch = _random_batch(seed=step)
        noise = learners["batched"].noise(32)
        losses.append({mode: learner.update(batch, noise, mode) for mode, learner in learners.items()})
    return learners, losses


def _weight_pairs(learners):
    return [(a, b) for net in NETS for a, b in zip(getattr(learners["batched"], net).parameters(),
                                                   getattr(learners["loop"], net).parameters())]


def test_batched_update_equals_per_agent_loop():
    learners, losses = _three_updates({"batched": PARITY, "loop": PARITY})
    for step in losses:
        assert step["batched"] == pytest.approx(step["loop"], rel=1e-5)
    for a, b in _weight_pairs(learners):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    # and the update really moved the weights (a no-op update would pass the comparison too)
    fresh = maddpg.MADDPG(4, 5, 4, PARITY)
    assert not torch.allclose(fresh.actor.weights[0], learners["batched"].actor.weights[0])


@pytest.mark.parametrize("term,value", [("gamma", 0.95 * 1.01), ("logit_reg", 1e-3 * 1.01),
                                        ("gumbel_temperature", 1.01)])
def test_the_parity_comparison_fails_when_one_term_of_one_path_is_perturbed_by_1_percent(term, value):
    learners, _ = _three_updates({"batched": PARITY, "loop": dataclasses.replace(PARITY, **{term: value})})
    assert max((a - b).abs().max().item() for a, b in _weight_pairs(learners)) > 100 * 1e-5


def test_batched_gradients_equal_per_agent_loop_gradients():
    # after an update the actors hold the actor-loss gradient: it must match between the two paths,
    # unclipped; the critics were frozen for that loss, so it left them no gradient in either path
    config = MADDPGConfig(hidden=16, batch_size=32, buffer_size=100, max_grad_norm=1e9)
    learners = {mode: maddpg.MADDPG(4, 5, 4, config) for mode in ("batched", "loop")}
    batch, noise = _random_batch(), learners["batched"].noise(32)
    for mode, learner in learners.items():
        learner.update(batch, noise, mode)
        assert all(p.requires_grad and not p.grad.any() for p in learner.critic.parameters())
    for a, b in zip(learners["batched"].actor.parameters(), learners["loop"].actor.parameters()):
        assert a.grad.abs().sum() > 0
        torch.testing.assert_close(a.grad, b.grad, atol=1e-6, rtol=1e-5)


def test_replay_buffer_wraps_around():
    buffer = ReplayBuffer(3, 2, 1)
    for k in range(5):
        buffer.add(np.full((2, 1), k), np.array([k, k]), np.zeros(2), np.zeros((2, 1)), np.zeros(2))
    assert buffer.size == 3 and sorted(buffer.actions[:, 0].tolist()) == [2, 3, 4]


def test_config_and_env_validation():
    with pytest.raises(ValueError, match="batch_size"):
        MADDPGConfig(batch_size=0)
    with pytest.raises(ValueError):
        MADDPGConfig(batch_size=10, buffer_size=5)
    env = SignalMatchEnv()
    env._act_space = spaces.Box(0, 1, shape=(2,))
    with pytest.raises(ValueError, match="Discrete"):
        maddpg.env_dims(env)


def test_same_seed_same_numbers():
    config = MADDPGConfig(seed=7, **SMALL)
    rows_a = maddpg.train(SignalMatchEnv(), config, episodes=12)[1]
    rows_b = maddpg.train(SignalMatchEnv(), config, episodes=12)[1]
    strip = lambda rows: [(r["return"], np.nan_to_num(r["eval_return"], nan=-1.0), r["updates"])  # noqa: E731
                          for r in rows]
    assert strip(rows_a) == strip(rows_b) and rows_a[-1]["updates"] > 0
    other = maddpg.train(SignalMatchEnv(), MADDPGConfig(seed=8, **SMALL), episodes=12)[1]
    assert strip(other) != strip(rows_a)


def test_maddpg_learns_signal_matching():
    env = SignalMatchEnv()
    config = MADDPGConfig(seed=200, **SMALL)
    learner, rows = maddpg.train(env, config, episodes=40)
    assert np.isnan(rows[0]["eval_return"]) and not np.isnan(rows[1]["eval_return"])  # every 2 episodes
    final = maddpg.evaluate(env, learner, seed=123, episodes=10)
    assert final >= 7.0, final  # random play: 2.0, best: 8.0
    untrained = maddpg.MADDPG(3, 4, 4, config)
    assert maddpg.evaluate(env, untrained, seed=123, episodes=10) < 4.0


def test_stochastic_evaluation_is_seeded_and_leaves_the_training_noise_alone():
    env = SignalMatchEnv()
    learner = maddpg.MADDPG(3, 4, 4, MADDPGConfig(seed=5, **SMALL))
    state = learner.generator.get_state().clone()
    first = maddpg.evaluate(env, learner, seed=9, episodes=5, policy="stochastic")
    assert torch.equal(learner.generator.get_state(), state)  # evaluating never moves the training stream
    assert maddpg.evaluate(env, learner, seed=9, episodes=5, policy="stochastic") == first  # same seed, same noise
    greedy = maddpg.evaluate(env, learner, seed=9, episodes=5, policy="greedy")
    assert greedy != first  # an untrained argmax repeats one action; samples spread over all four
    with pytest.raises(ValueError, match="evaluation policy"):
        maddpg.evaluate(env, learner, seed=9, policy="mean")
    from marlinkit.maestro import ablation

    assert ablation.EVAL_POLICIES == maddpg.EVAL_POLICIES  # maestro keeps a torch-free copy


def test_the_openblas_products_match_torchs_products_and_gradients_and_repeat_bit_for_bit():
    """products="openblas" (NumPy's pinned OpenBLAS) is the same arithmetic as torch's batched path: the
    layer and its gradients agree to float precision, three updates of a learner agree with the torch
    learner's, and a rerun repeats its bits. Its key names it; the default's key is the one runs had before."""
    from marlinkit.algos import products as routes

    rng = torch.Generator().manual_seed(0)
    b, x, w = (torch.randn(shape, generator=rng, requires_grad=True) for shape in ((3, 1, 5), (3, 7, 4), (3, 4, 5)))
    for products in ("torch", "openblas"):
        out = routes.baddbmm(b, x, w, products)
        (out * torch.linspace(-1, 1, 5)).sum().backward()
        grads = [t.grad.clone() for t in (b, x, w)]
        for t in (b, x, w):
            t.grad = None
        if products == "torch":
            reference, reference_grads = out.detach(), grads
    torch.testing.assert_close(out.detach(), reference)
    for mine, theirs in zip(grads, reference_grads):
        torch.testing.assert_close(mine, theirs)

    def trained(products):
        learner = maddpg.MADDPG(3, 5, 4, maddpg.MADDPGConfig(seed=7, hidden=16, batch_size=32, buffer_size=64,
                                                             products=products))
        data = np.random.default_rng(1)
        buffer = maddpg.ReplayBuffer(64, 3, 5)
        for _ in range(64):
            buffer.add(data.random((3, 5)), data.integers(4, size=3), data.random(3), data.random((3, 5)), np.zeros(3))
        for _ in range(3):
            learner.update(buffer.sample(32, learner.rng), learner.noise(32))
        return [p.detach().clone() for net in (learner.actor, learner.critic) for p in net.parameters()]

    torch_weights, openblas_weights = trained("torch"), trained("openblas")
    for mine, theirs in zip(openblas_weights, torch_weights):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(openblas_weights, trained("openblas")))
    assert not any(torch.equal(a, b) for a, b in zip(openblas_weights, torch_weights))  # other kernels: other bits
    assert "products" not in keys.maddpg_key(maddpg.MADDPGConfig())
    assert keys.maddpg_key(maddpg.MADDPGConfig(products="openblas"))["products"] == "openblas"
    with pytest.raises(ValueError, match="products"):
        maddpg.MADDPGConfig(products="mkl")
