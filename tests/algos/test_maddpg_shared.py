"""Parameter-shared MADDPG, held decisions and the shared DQN peer: each learns a real small env, and each setting
changes exactly what it names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from marlinkit.algos import maddpg, maddpg_shared
from marlinkit.algos.maddpg import MADDPGConfig
from marlinkit.algos.replay_buffer import ReplayBuffer
from marlinkit.algos.shared_dqn import DQNConfig, SharedDQN
from marlinkit.repro import keys
from tests.algos.test_maddpg import SMALL, SignalMatchEnv

SHARED = dict(SMALL, sharing="shared-local")


def test_the_shared_learner_is_chosen_by_its_setting_and_validated():
    assert isinstance(maddpg.make_learner(3, 4, 4, MADDPGConfig(**SMALL)), maddpg.MADDPG)
    shared = maddpg.make_learner(3, 4, 4, MADDPGConfig(**SHARED))
    assert isinstance(shared, maddpg_shared.SharedMADDPG)
    assert shared.actor[0].in_features == 4 and shared.critic[0].in_features == 4 + 3 + 3 * 4  # own obs, id, actions
    for bad in ({"sharing": "all"}, {"decision_s": 0}, {"decision_s": 2.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MADDPGConfig(**{**SMALL, **bad})
    assert {"sharing", "decision_s"}.isdisjoint(keys.maddpg_key(MADDPGConfig()))  # the paper's runs keep their keys
    key = keys.maddpg_key(MADDPGConfig(sharing="shared-local", decision_s=5))
    assert (key["sharing"], key["decision_s"]) == ("shared-local", 5)
    with pytest.raises(ValueError, match="one seed"):
        maddpg.make_learner(3, 4, 4, MADDPGConfig(**SHARED), seeds=(1, 2))


def test_the_actor_loss_takes_the_own_action_from_the_policy_and_the_others_from_the_buffer():
    buffer = torch.nn.functional.one_hot(torch.tensor([[0, 1, 2]]), 4).float()  # (B=1, N=3, A=4)
    policy = torch.full((1, 3, 4), 0.25)
    joint = maddpg_shared.own_action_joint(buffer, policy).view(1, 3, 3, 4)
    for i in range(3):
        for j in range(3):
            assert torch.equal(joint[0, i, j], policy[0, j] if i == j else buffer[0, j])


def test_shared_maddpg_learns_signal_matching_and_repeats_bit_for_bit():
    env = SignalMatchEnv()
    config = MADDPGConfig(seed=200, **SHARED)
    learner, rows = maddpg.train(env, config, episodes=40)
    assert maddpg.evaluate(env, learner, seed=123, episodes=10) >= 7.0  # random play: 2.0, best: 8.0
    again, rows_again = maddpg.train(SignalMatchEnv(), config, episodes=40)
    assert [r["return"] for r in rows] == [r["return"] for r in rows_again]
    assert all(torch.equal(a, b) for a, b in zip(learner.actor.state_dict().values(),
                                                 again.actor.state_dict().values()))


def test_the_openblas_linear_is_nn_linear_to_float_precision_and_repeats_its_bits():
    """products.Linear with products="openblas" keeps nn.Linear's parameters and state dict, computes the same values
    and gradients to float precision over any leading axes, and repeats its bits; the shared learner routes every
    network through it."""
    from marlinkit.algos import products

    torch.manual_seed(0)
    layer = products.Linear(7, 5, "openblas")
    reference = torch.nn.Linear(7, 5)
    reference.load_state_dict(layer.state_dict())
    assert list(layer.state_dict()) == ["weight", "bias"]
    x = torch.randn(3, 4, 7, requires_grad=True)
    outs, grads = [], []
    for net in (layer, reference, layer):
        x.grad = None
        net.zero_grad()
        out = net(x)
        (out * torch.linspace(-1, 1, 5)).sum().backward()
        outs.append(out.detach())
        grads.append([x.grad.clone(), net.weight.grad.clone(), net.bias.grad.clone()])
    torch.testing.assert_close(outs[0], outs[1])
    for mine, theirs in zip(grads[0], grads[1]):
        torch.testing.assert_close(mine, theirs)
    assert torch.equal(outs[0], outs[2]) and all(torch.equal(a, b) for a, b in zip(grads[0], grads[2]))
    with pytest.raises(ValueError, match="products must be one of"):
        products.Linear(2, 2, "mkl")
    shared = maddpg.make_learner(3, 4, 4, MADDPGConfig(**SHARED, products="openblas"))
    assert {m.products for net in (shared.actor, shared.critic, shared.target_actor, shared.target_critic)
            for m in net if isinstance(m, products.Linear)} == {"openblas"}


class CountingEnv(SignalMatchEnv):
    """SignalMatchEnv that records every joint action it is stepped with, and the team reward it paid."""

    def step(self, actions):
        self.seen.append(tuple(actions[a] for a in self.possible_agents))
        out = super().step(actions)
        self.paid.append(out[1][self.possible_agents[0]])
        return out

    def reset(self, seed=None, options=None):
        self.seen, self.paid = [], []
        return super().reset(seed, options)


def test_a_decision_holds_its_action_and_one_transition_spans_it():
    env = CountingEnv(length=10)
    config = MADDPGConfig(seed=3, **{**SMALL, "decision_s": 4, "learning_starts": 10**6})
    learner = maddpg.make_learner(3, 4, 4, config)
    buffer = ReplayBuffer(100, 3, 4)
    out = maddpg.run_episode(env, learner, 0, True, buffer)
    assert out["steps"] == 10 and buffer.size == 3  # decisions at steps 0, 4, 8 (the last one cut to 2 steps)
    assert env.seen[0] == env.seen[3] and env.seen[4] == env.seen[7] and env.seen[8] == env.seen[9]
    for k, (start, end) in enumerate(((0, 4), (4, 8), (8, 10))):  # a transition's reward: the mean over its steps
        np.testing.assert_allclose(buffer.rewards[k], np.mean(env.paid[start:end]), rtol=1e-6)
        assert tuple(buffer.actions[k]) == env.seen[start]


def test_one_step_decisions_update_on_the_papers_cadence():
    config = MADDPGConfig(seed=3, **{**SMALL, "update_every": 4, "learning_starts": 64})
    learner = maddpg.make_learner(3, 4, 4, config)
    buffer, steps, updates = ReplayBuffer(5000, 3, 4), 0, 0
    for episode in range(12):
        out = maddpg.run_episode(SignalMatchEnv(), learner, episode, True, buffer, steps)
        steps, updates = steps + out["steps"], updates + out["updates"]
    assert updates == (steps - 64) // 4 + 1  # every 4th step from step 64 on


def test_the_shared_dqn_learns_signal_matching_through_the_same_episode_loop():
    env = SignalMatchEnv()
    config = DQNConfig(seed=1, batch_size=64, buffer_size=5000, learning_starts=64, update_every=1, decision_s=1,
                       hidden=32, target_every=50, epsilon_decay_episodes=20)
    learner = SharedDQN(3, 4, 4, config)
    buffer, steps = ReplayBuffer(config.buffer_size, 3, 4), 0
    untrained = maddpg.evaluate(env, SharedDQN(3, 4, 4, config), seed=123, episodes=10)
    for episode in range(40):
        learner.set_episode(episode)
        steps += maddpg.run_episode(env, learner, episode, True, buffer, steps)["steps"]
    assert learner.epsilon == config.epsilon_end and learner.updates > 100
    assert maddpg.evaluate(env, learner, seed=123, episodes=10) >= 7.0 > untrained + 2
