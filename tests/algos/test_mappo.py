"""MAPPO: GAE, the PPO losses, the closed form against autograd (gradients, whole updates, a paper-length prefix),
critic inputs, sampling, learning from sampled and from outside actions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from marlinkit.algos import gae, mappo, mappo_fast, mappo_rollouts
from marlinkit.algos.joint_planner import ExactJointPlanner
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import get_layout
from marlinkit.repro import keys

#: A fast, fixed training budget (seconds on 2 cores): larger steps, fewer epochs than the authors'.
FAST = mappo.MAPPOConfig(lr=2e-3, update_epochs=8, minibatch_size=500, steps_per_iteration=1500, kl_coeff=0.0)


def test_gae_matches_hand_computed_values():
    rewards = np.array([1.0, 2.0, 3.0])
    values = np.array([0.5, 1.0, 1.5])
    dones = np.array([0.0, 1.0, 0.0])  # the episode ends with step 1; step 2 starts a new one
    advantages, returns = gae.compute_gae(rewards, values, dones, np.array(2.0), gamma=0.9, lam=0.8)
    # t=2: 3 + 0.9*2 - 1.5 = 3.3 | t=1 (terminal): 2 - 1 = 1.0 | t=0: (1 + 0.9*1 - 0.5) + 0.9*0.8*1.0 = 2.12
    np.testing.assert_allclose(advantages, [2.12, 1.0, 3.3])
    np.testing.assert_allclose(returns, [2.62, 2.0, 4.8])


def test_gae_with_lambda_one_gives_discounted_returns_to_go():
    rewards = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])  # two columns (e.g. agents) at once
    values = np.array([[0.3, 0.1], [0.2, 0.4], [0.7, 0.0]])
    _, returns = gae.compute_gae(rewards, values, np.zeros(3), np.array([10.0, 0.0]), gamma=0.5, lam=1.0)
    np.testing.assert_allclose(returns[:, 0],
                               [1 + 0.5 * 0 + 0.25 * 2 + 0.125 * 10, 0 + 0.5 * 2 + 0.25 * 10, 2 + 0.5 * 10])
    np.testing.assert_allclose(returns[:, 1], [0 + 0.5 * 1 + 0.25 * 1, 1 + 0.5 * 1, 1.0])


def test_clipped_policy_loss_value_and_gradient_on_a_constructed_batch():
    old = torch.zeros(4)
    logp = torch.log(torch.tensor([1.5, 0.5, 1.1, 0.7])).requires_grad_()
    advantages = torch.tensor([1.0, 1.0, -1.0, -1.0])
    loss = mappo.clipped_policy_loss(logp, old, advantages, clip=0.2)
    # min(rA, clip(r)A): 1.2 (clipped), 0.5, -1.1, -0.8 (clipped) -> mean -0.05, negated
    assert loss.item() == pytest.approx(0.05)
    loss.backward()
    # clipped rows carry no gradient; the others d(-rA/4)/dlogp = -rA/4
    np.testing.assert_allclose(logp.grad.numpy(), [0.0, -0.125, 0.275, 0.0], atol=1e-6)


def test_value_loss_clip_entropy_kl_and_its_adaptation():
    values, returns = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 10.0])
    assert mappo.value_loss(values, returns, None).item() == pytest.approx((1 + 100) / 2)
    assert mappo.value_loss(values, returns, 10.0).item() == pytest.approx((1 + 10) / 2)
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.0, 0.0]])
    assert mappo.categorical_kl(logits, logits).item() == pytest.approx(0.0, abs=1e-7)
    p, q = torch.softmax(logits, -1), torch.full((1, 5), 0.2)
    assert mappo.categorical_kl(logits, torch.zeros(1, 5)).item() == pytest.approx(float((p * (p / q).log()).sum()))
    assert mappo.adapt_kl_coeff(0.01, kl=0.05, target=0.01) == pytest.approx(0.015)
    assert mappo.adapt_kl_coeff(0.01, kl=0.001, target=0.01) == pytest.approx(0.005)
    assert mappo.adapt_kl_coeff(0.01, kl=0.01, target=0.01) == 0.01
    assert mappo.entropy(torch.zeros(1, 5)).item() == pytest.approx(np.log(5))
    assert mappo.entropy(torch.tensor([[0.0, 50.0, 0.0, 0.0, 0.0]])).item() == pytest.approx(0.0, abs=1e-12)


def _minibatch(n: int, runs: int = 2, seed: int = 0):
    """Logits, values and a Minibatch [runs, n, ...] whose ratios spread past both clip bounds."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(runs, n, 5, generator=gen, requires_grad=True)
    values = torch.randn(runs, n, generator=gen, requires_grad=True)
    old_logits = logits.detach() + 0.5 * torch.randn(runs, n, 5, generator=gen)
    actions = torch.randint(0, 5, (runs, n), generator=gen)
    old_log_probs = torch.log_softmax(old_logits, -1)
    onehot = nn.functional.one_hot(actions, 5).float()
    mb = mappo.Minibatch(None, None, onehot, (old_log_probs * onehot).sum(-1), old_log_probs, old_log_probs.exp(),
                         torch.randn(runs, n, generator=gen), 2 * torch.randn(runs, n, generator=gen))
    return logits, values, mb


@pytest.mark.parametrize("ent_coef,vf_clip", [(0.0, 10.0), (0.05, 0.5), (0.05, None)])
def test_closed_form_loss_gradients_match_autograd_through_ppo_loss(ent_coef, vf_clip):
    cfg = mappo.MAPPOConfig(ent_coef=ent_coef, vf_clip=vf_clip, vf_coef=0.5)
    logits, values, mb = _minibatch(64)
    kl_coeff = torch.tensor([0.3, 0.05])  # one KL weight per run
    expected_loss, expected_terms = mappo.ppo_loss(logits, values, mb, cfg, kl_coeff)
    expected = torch.autograd.grad(expected_loss, (logits, values))
    with torch.no_grad():
        grad_logits, grad_values, terms = mappo_fast.loss_gradients(logits, values, mb, cfg, kl_coeff)
    torch.testing.assert_close(grad_logits, expected[0], atol=1e-7, rtol=1e-5)
    torch.testing.assert_close(grad_values, expected[1], atol=1e-7, rtol=1e-5)
    torch.testing.assert_close(terms, expected_terms)
    assert terms.shape == (2, 3)
    ratio = torch.exp((torch.log_softmax(logits, -1) * mb.action_onehot).sum(-1) - mb.old_logp).detach()
    assert (ratio > 1.2).any() and (ratio < 0.8).any(), "the batch exercises the surrogate clip"
    if vf_clip == 0.5:
        assert ((values - mb.returns) ** 2 > vf_clip).any() and ((values - mb.returns) ** 2 < vf_clip).any()


def test_ppo_loss_of_runs_side_by_side_is_the_sum_of_each_runs_loss():
    cfg = mappo.MAPPOConfig(ent_coef=0.01)
    logits, values, mb = _minibatch(32)
    both, terms = mappo.ppo_loss(logits, values, mb, cfg, torch.tensor([0.2, 0.1]))
    alone = [mappo.ppo_loss(logits[r], values[r], mappo.Minibatch(*(None if t is None else t[r] for t in mb)), cfg, kl)
             for r, kl in enumerate((0.2, 0.1))]
    assert both.item() == pytest.approx(alone[0][0].item() + alone[1][0].item(), rel=1e-6)
    torch.testing.assert_close(terms, torch.stack([alone[0][1], alone[1][1]]))


def _run_params(agent: mappo.MAPPO, run: int, names: slice) -> list[torch.Tensor]:
    return [p[run:run + 1] for p in agent.params[names]]


def test_networks_are_tanh_mlps_of_their_layers_per_run():
    agent = mappo.MAPPO(mappo.MAPPOConfig(), [0, 1])
    x, c = torch.randn(2, 7, mappo_rollouts.OBS_SIZE), torch.randn(2, 7, mappo_rollouts.CRITIC_SIZE)
    logits, values = mappo.mlp_forward(agent.actor, x)[-1], mappo.mlp_forward(agent.critic, c)[-1]
    for run, seed in enumerate((0, 1)):
        layers = mappo.initial_layers(agent.config, seed)
        actor = nn.Sequential(layers[0], nn.Tanh(), layers[1], nn.Tanh(), layers[2])
        critic = nn.Sequential(layers[3], nn.Tanh(), layers[4])
        with torch.no_grad():
            torch.testing.assert_close(logits[run], actor(x[run]), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(values[run], critic(c[run]), rtol=1e-5, atol=1e-6)


def test_fast_tanh_is_tanh_to_float_rounding():
    x = torch.linspace(-12, 12, 200_001)
    assert (mappo.fast_tanh(x) - torch.tanh(x)).abs().max().item() < 3e-7
    assert mappo.fast_tanh(torch.tensor([0.0, 30.0, -30.0])).tolist() == [0.0, 1.0, -1.0]


def test_tanh_derivative_gives_autograds_tanh_backward_bit_for_bit():
    """The closed form's tanh backward, ``g * (1 - y^2)`` with ``1 - y^2`` rounded once, is the bits torch's own
    tanh backward gives (two roundings, ``g * (1 - y * y)``, differ in the last bit)."""
    x = (3 * torch.randn(4, 300, 257, generator=torch.Generator().manual_seed(0))).requires_grad_()
    y = torch.tanh(x)
    g = 1e-3 * torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    (expected,) = torch.autograd.grad(y, x, g)
    assert torch.equal(g * mappo_fast.tanh_derivative(y.detach()), expected)


@pytest.mark.parametrize("network", ["actor", "critic"])
def test_written_out_backward_matches_autograd(network):
    agent = mappo.MAPPO(mappo.MAPPOConfig(), [1, 2])
    params = [p.detach().clone().requires_grad_() for p in getattr(agent, network)]
    x = 3 * torch.randn(2, 50, params[0].shape[2])
    grad_out = torch.randn(2, 50, params[-2].shape[1])
    expected = torch.autograd.grad(mappo.mlp_forward(params, x)[-1], params, grad_out)
    with torch.no_grad():
        got = mappo_fast.mlp_backward(params, mappo.mlp_forward(params, x), grad_out)
    assert [g.shape for g in got] == [p.shape for p in params]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


def _random_batch(n: int, distinct: int, seed: int):
    """One run's update rows [1, n, ...] over ``distinct`` observations."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 9, (distinct, mappo_rollouts.OBS_SIZE)).astype(np.float32)
    obs = table[rng.integers(0, distinct, n)]
    actions = rng.integers(0, 5, n)
    logits = rng.normal(size=(n, 5)).astype(np.float32)
    rows = (obs, rng.random((n, mappo_rollouts.CRITIC_SIZE)).astype(np.float32), actions,
            mappo_rollouts.log_prob(logits, actions).astype(np.float32), logits, rng.normal(size=n), rng.normal(size=n))
    return tuple(a[None] for a in rows)


def _stats_close(a: dict, b: dict, rel: float) -> None:
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=rel)


def test_update_on_distinct_observations_gives_the_per_row_update():
    """Same gradients, sums in another order: parameters agree to float rounding, not bit for bit."""
    batch = _random_batch(1000, distinct=20, seed=0)
    per_row = mappo.MAPPO(mappo.MAPPOConfig(lr=1e-3, update_epochs=3, distinct_obs=False), [0])
    distinct = mappo.MAPPO(mappo.MAPPOConfig(lr=1e-3, update_epochs=3, distinct_obs=True), [0])
    _stats_close(per_row.update(*batch), distinct.update(*batch), rel=1e-4)
    moved = [(a - b).abs().max().item() for a, b in zip(per_row.params, mappo.MAPPO(per_row.config, [0]).params)]
    assert min(moved) > 1e-4, "the update moved every parameter"
    torch.testing.assert_close(per_row.flat, distinct.flat, rtol=1e-4, atol=1e-6)
    assert not torch.equal(per_row.flat, distinct.flat), "the two paths differ in rounding"


#: The autograd gradients agree with the closed form's to this relative norm, tensor by tensor (measured: ~1e-6).
GRADIENT_RTOL = 1e-5
#: ent_coef > 0 and the default vf_clip: every term of ppo_loss has a gradient on the corridor batch below.
REFERENCE = mappo.MAPPOConfig(lr=1e-3, steps_per_iteration=400, update_epochs=4, ent_coef=0.01)


def _corridor_rows(config: mappo.MAPPOConfig, seeds=(0, 1)):
    """A real batch: the first rollout of 8 maze_like copies per run (800 agent-steps each), as training collects it."""
    agent = mappo.MAPPO(config, list(seeds))
    runs = [mappo.RunSpec(get_layout("maze_like"), seed) for seed in seeds]
    return agent, mappo.training_rows(agent, *next(mappo_rollouts.rollouts(agent, runs, n_envs=8, episodes=2)))


def _relative_errors(got: torch.Tensor, expected: torch.Tensor, agent: mappo.MAPPO) -> list[float]:
    """Per run and parameter tensor: |got - expected| / |expected| (flat gradients [R, width])."""
    return [((g[r] - e[r]).norm() / e[r].norm()).item() for r in range(len(agent.seeds))
            for g, e in zip(agent.views(got), agent.views(expected))]


@pytest.fixture(scope="module")
def moved_agent():
    """Agents one update past their own corridor batches: ratios now spread past both clip bounds."""
    agent, rows = _corridor_rows(REFERENCE)
    agent.update(*rows)
    return agent, rows


@pytest.mark.parametrize("distinct", [True, False])
def test_closed_form_and_autograd_give_the_same_gradients_on_a_corridor_batch(moved_agent, distinct):
    agent, rows = moved_agent
    batch, actor_in = mappo.training_batch(dataclasses.replace(agent.config, distinct_obs=distinct), *rows)
    assert (actor_in is not None) == distinct
    fast, fast_terms = agent.closed_form_gradients(batch, actor_in)
    reference, reference_terms = agent.autograd_gradients(batch, None)  # the actor per row
    assert fast.shape == reference.shape == agent.flat.shape
    assert max(_relative_errors(fast, reference, agent)) < GRADIENT_RTOL
    torch.testing.assert_close(fast_terms, reference_terms)
    with torch.no_grad():  # the batch reaches every branch of the loss
        logp = (torch.log_softmax(mappo.mlp_forward(agent.actor, batch.obs)[-1], -1) * batch.action_onehot).sum(-1)
        ratio = torch.exp(logp - batch.old_logp)
        squared = (mappo.mlp_forward(agent.critic, batch.critic_in)[-1][..., 0] - batch.returns) ** 2
    assert (ratio > 1.2).any() and (ratio < 0.8).any() and ((ratio > 0.8) & (ratio < 1.2)).any()
    assert (squared > agent.config.vf_clip).any() and (squared < agent.config.vf_clip).any()
    assert (reference_terms[:, 2] > 0).all() and (agent.kl_coeff > 0).all()


@pytest.mark.parametrize("term", ["clip_coef", "vf_coef", "vf_clip", "ent_coef", "kl_coeff"])
def test_the_gradient_comparison_fails_when_one_term_is_perturbed_by_1_percent(moved_agent, term):
    agent, rows = moved_agent
    batch, actor_in = mappo.training_batch(agent.config, *rows)
    fast, _ = agent.closed_form_gradients(batch, actor_in)
    config, kl_coeff = agent.config, agent.kl_coeff
    try:
        if term == "kl_coeff":
            agent.kl_coeff = kl_coeff * 1.01
        else:
            factor = 1.1 if term == "clip_coef" else 1.01
            agent.config = dataclasses.replace(config, **{term: getattr(config, term) * factor})
        perturbed, _ = agent.autograd_gradients(batch, actor_in)
    finally:
        agent.config, agent.kl_coeff = config, kl_coeff
    assert max(_relative_errors(fast, perturbed, agent)) > 10 * GRADIENT_RTOL


def test_adam_step_gives_torch_optim_adam_numbers():
    agent = mappo.MAPPO(mappo.MAPPOConfig(lr=1e-2), [0, 1])
    reference = agent.flat.detach().clone().requires_grad_()
    optimizer = torch.optim.Adam([reference], lr=1e-2, fused=True)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        grad = torch.randn(reference.shape, generator=gen)
        reference.grad = grad.clone()
        optimizer.step()
        agent._adam_step(grad.clone())
    torch.testing.assert_close(agent.flat, reference.detach(), rtol=0, atol=0)


def test_critic_inputs_hold_own_obs_other_obs_and_other_action():
    obs = np.array([[[1, 0, 1, 7], [1, 7, 1, 0]]], dtype=np.float32)
    x = mappo_rollouts.critic_inputs(obs, np.array([[2, 4]]))
    assert x.shape == (1, 2, mappo_rollouts.CRITIC_SIZE) == (1, 2, 13)
    np.testing.assert_array_equal(x[0, 0], [1, 0, 1, 7, 1, 7, 1, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(x[0, 1], [1, 7, 1, 0, 1, 0, 1, 7, 0, 0, 1, 0, 0])


def test_inverse_cdf_sampling_and_log_probs():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4, 1e-12]]))
    uniforms = np.array([0.05, 0.15, 0.31, 0.61, 0.9999])
    np.testing.assert_array_equal(mappo_rollouts.sample_actions(np.repeat(logits, 5, 0), uniforms), [0, 1, 2, 3, 3])
    draws = mappo_rollouts.sample_actions(np.repeat(logits, 40_000, 0), np.random.default_rng(0).random(40_000))
    np.testing.assert_allclose(np.bincount(draws, minlength=5) / 40_000, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.01)
    np.testing.assert_allclose(mappo_rollouts.log_prob(logits, np.array([3])), [np.log(0.4)])


def test_evaluation_pairs_share_random_streams_per_run():
    a = mappo_rollouts.evaluation_uniforms((3, 100), 4)
    np.testing.assert_array_equal(a[:, :2], mappo_rollouts.evaluation_uniforms((3, 100), 2))
    assert not np.array_equal(a[:, 0], a[:, 1])
    assert not np.array_equal(a, mappo_rollouts.evaluation_uniforms((3, 101), 4))


def test_mappo_alone_solves_single_slot_within_a_fixed_budget():
    layout = get_layout("single_slot")
    untrained = mappo.evaluate(mappo.MAPPO(FAST, [0]).policy(0), layout, runs=100, seed=0).mean()
    agent = mappo.train(FAST, layout, n_envs=15, episodes=60, seed=0)
    trained = mappo.evaluate(agent, layout, runs=100, seed=0).mean()
    assert untrained < 0.5
    assert trained >= 0.9, f"sampled performance {trained:.3f} after 60 episodes x 15 copies"


def test_policy_learns_from_outside_actions_alone():
    """Every action comes from the exact planner: the policy can only improve by training on them."""
    layout = get_layout("two_path")
    arrays = core.layout_arrays(layout)
    plan = ExactJointPlanner().make_plan(layout, np.asarray(layout.starts))
    expert = np.zeros((core.EPISODE_STEPS, 2), np.int64)
    expert[:len(plan.actions)] = plan.actions
    seen = []

    def generator(state, sampled):
        seen.append(sampled.copy())
        return expert[state.t]

    performances = []
    agent = mappo.train(FAST, layout, n_envs=15, episodes=25, seed=1, generator=generator,
                        on_episode_end=lambda episode, agent, perf, ret: performances.append(perf))
    np.testing.assert_array_equal(np.concatenate(performances), 1.0)  # the outside actions were played
    before = mappo.evaluate(mappo.MAPPO(FAST, [1]).policy(0), layout, runs=100, seed=0).mean()
    after = mappo.evaluate(agent, layout, runs=100, seed=0).mean()
    assert after > before + 0.3, (before, after)
    expert_logp = mappo_rollouts.log_prob(agent.logits(core.observe(arrays, core.reset(arrays, 1))[0]), expert[0])
    assert np.all(np.exp(expert_logp) > 0.3), "the first expert moves became likelier than uniform (0.2)"


def test_training_validates_its_arguments():
    with pytest.raises(ValueError, match="n_envs >= 1"):
        mappo.train(FAST, get_layout("single_slot"), n_envs=0, episodes=1, seed=0)
    with pytest.raises(ValueError, match="at least one run"):
        mappo.train_runs(FAST, [], n_envs=1, episodes=1)


def test_torch_initialisation_is_nn_linears_own_and_enters_the_run_key_only_when_set():
    orthogonal = mappo.MAPPO(mappo.MAPPOConfig(), [3]).policy(0).state_dict()
    default = mappo.MAPPO(mappo.MAPPOConfig(init="torch"), [3]).policy(0).state_dict()
    torch.manual_seed(3)
    reference = [torch.nn.Linear(mappo.OBS_SIZE, 256), torch.nn.Linear(256, 256), torch.nn.Linear(256, 5)]
    for k, linear in zip((0, 2, 4), reference):  # "torch": nn.Linear's own draws, in layer order
        torch.testing.assert_close(default[f"actor.{k}.weight"], linear.weight.detach(), rtol=0, atol=0)
        torch.testing.assert_close(default[f"actor.{k}.bias"], linear.bias.detach(), rtol=0, atol=0)
    head = orthogonal["actor.4.weight"]
    assert float(orthogonal["actor.0.bias"].abs().max()) == 0.0 and float(head.norm()) < 0.05  # CleanRL's 0.01 head
    assert float(default["actor.4.weight"].norm()) > 10 * float(head.norm())
    assert "init" not in keys.mappo_key(mappo.MAPPOConfig())  # the runs cached before the setting keep their keys
    assert keys.mappo_key(mappo.MAPPOConfig(init="torch"))["init"] == "torch"
    with pytest.raises(ValueError, match="init must be one of"):
        mappo.MAPPOConfig(init="normc")


def test_separated_generated_steps_cut_the_trace_and_give_no_gradient():
    """One copy, agents as the last axis; step 1 is generated (a plan step): step 0 keeps only its TD error,
    step 1's target is its own value and its advantage the others' mean (0 once standardised)."""
    rewards = np.array([[[1.0, 1.0]], [[5.0, 5.0]], [[2.0, 0.0]]])  # [T=3, B=1, 2]
    values = np.array([[[0.5, 0.2]], [[1.0, 1.0]], [[1.5, 0.4]]])
    dones, next_value = np.zeros((3, 1, 1)), np.array([[2.0, 0.0]])
    generated = np.array([[False], [True], [False]])
    advantages, returns = gae.separate_generated_steps(rewards, values, dones, next_value, 0.9, 0.8, generated)
    plain, _ = gae.compute_gae(rewards, values, dones, next_value, 0.9, 0.8)
    td = rewards + 0.9 * np.concatenate([values[1:], next_value[None]]) - values  # every trace is cut here
    np.testing.assert_allclose(advantages[0], td[0])  # not plain[0], which carries step 1's plan rewards
    assert not np.allclose(plain[0], td[0])
    np.testing.assert_allclose(advantages[2], plain[2])  # a window's last step bootstraps from V either way
    np.testing.assert_allclose(returns[1], values[1])  # no value-loss gradient from the plan step
    np.testing.assert_allclose(advantages[1], np.mean([advantages[0], advantages[2]]))
    standardised = (advantages - advantages.mean()) / advantages.std()
    np.testing.assert_allclose(standardised[1], 0.0, atol=1e-12)
    # with nothing generated the setting is plain GAE
    none = np.zeros((3, 1), bool)
    np.testing.assert_array_equal(
        gae.separate_generated_steps(rewards, values, dones, next_value, 0.9, 0.8, none)[0], plain)


def test_generated_steps_setting_is_checked_and_enters_the_run_key_only_when_set():
    assert "generated_steps" not in keys.mappo_key(mappo.MAPPOConfig())  # the committed runs keep their keys
    assert keys.mappo_key(mappo.MAPPOConfig(generated_steps="separate"))["generated_steps"] == "separate"
    with pytest.raises(ValueError, match="generated_steps must be one of"):
        mappo.MAPPOConfig(generated_steps="mask")
    agent = mappo.MAPPO(mappo.MAPPOConfig(generated_steps="separate"), [0])
    rollout = next(mappo_rollouts.rollouts(agent, [mappo.RunSpec(get_layout("single_slot"), 0)], n_envs=2, episodes=1))
    assert rollout[-1].shape == (len(rollout[0]), 1, 2) and not rollout[-1].any()  # no generator: no generated steps
    with pytest.raises(ValueError, match="generated-step flags"):
        mappo.training_rows(agent, *rollout[:-1])


def test_gradients_setting_is_honoured_and_checked(monkeypatch):
    """``MAPPOConfig(gradients="autograd")`` trains by ``loss.backward()`` (the closed form is never called) to the
    closed form's updates to float rounding, not in bits; it enters a run's cache key only when set."""
    rows = _random_batch(600, distinct=20, seed=3)
    base = mappo.MAPPOConfig(lr=1e-3, update_epochs=2)
    fast = mappo.MAPPO(base, [0])
    fast_stats = fast.update(*rows)
    slow = mappo.MAPPO(dataclasses.replace(base, gradients="autograd"), [0])
    with monkeypatch.context() as patch:
        patch.setattr(mappo_fast, "gradients", lambda *a, **k: pytest.fail("the closed form ran under autograd"))
        _stats_close(fast_stats, slow.update(*rows), rel=1e-4)
        with pytest.raises(pytest.fail.Exception, match="closed form ran"):
            fast.update(*rows)
    torch.testing.assert_close(fast.flat, slow.flat, rtol=1e-3, atol=1e-5)
    assert not torch.equal(fast.flat, slow.flat), "two paths, two roundings"
    assert "gradients" not in keys.mappo_key(base)
    assert keys.mappo_key(slow.config)["gradients"] == "autograd"
    with pytest.raises(ValueError, match="gradients must be one of"):
        mappo.MAPPOConfig(gradients="numeric")


#: The paper's MAPPO (the authors' settings: MAPPOConfig's defaults) on its 15 copies of a corridor.
PAPER_COPIES = 15
#: Both paths' weights agree to this relative norm per tensor after the prefix.
WEIGHT_RTOL = 1e-5


def _relative_weight_errors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[float]:
    return [((a[k] - b[k]).norm() / b[k].norm()).item() for k in a]


@pytest.mark.slow
def test_closed_form_and_autograd_train_to_the_same_weights_over_a_30_episode_paper_prefix():
    """30 episodes x 15 copies at the paper's settings (4000 steps per update, 30 epochs of 128-row minibatches:
    6 updates, ~11,000 Adam steps), trained apart: the closed form and ``loss.backward()`` end within
    ``WEIGHT_RTOL`` of each other; a 1 % change of the learning rate ends further apart than that.

    In float64 (``MAPPOConfig.precision``): in float32 two computations of PPO that differ in the last bit drift
    apart over many updates whatever computes them, because PPO piles ratios up at the clip's edges and a last-bit
    difference moves one across, switching its row's gradient on or off (measured here: ~3e-2 after this prefix
    in float32, from below 1e-6 after the first update; the next test puts that beside one ulp of the learning rate)."""
    layout, config = get_layout("single_slot"), mappo.MAPPOConfig(precision="float64")
    weights = {name: mappo.train(cfg, layout, n_envs=PAPER_COPIES, episodes=30, seed=0).state_dict() for name, cfg in (
        ("closed_form", config), ("autograd", dataclasses.replace(config, gradients="autograd")),
        ("lr", dataclasses.replace(config, lr=config.lr * 1.01)))}
    initial = mappo.MAPPO(config, [0]).policy(0).state_dict()
    moved = [e for e, w in zip(_relative_weight_errors(weights["closed_form"], initial), initial.values()) if w.any()]
    assert min(moved) > 100 * WEIGHT_RTOL, "it trained"
    assert max(_relative_weight_errors(weights["autograd"], weights["closed_form"])) < WEIGHT_RTOL
    assert max(_relative_weight_errors(weights["lr"], weights["closed_form"])) > WEIGHT_RTOL


@pytest.mark.slow
def test_in_float32_the_two_paths_end_closer_than_one_path_moved_by_one_ulp_of_its_learning_rate():
    """The same prefix at the paper's precision, float32: the closed form and ``loss.backward()`` end 2.6e-2 apart
    (relative, the worst tensor), and the closed form against itself with its learning rate one float32 ulp larger
    ends 1.9e-1 apart. What separates the paths is last-bit rounding grown by the training, less than one ulp of one
    setting grows to: no two float32 computations of PPO meet ``WEIGHT_RTOL`` after this prefix."""
    layout, config = get_layout("single_slot"), mappo.MAPPOConfig()
    assert config.precision == "float32"
    weights = {name: mappo.train(cfg, layout, n_envs=PAPER_COPIES, episodes=30, seed=0).state_dict() for name, cfg in (
        ("closed_form", config), ("autograd", dataclasses.replace(config, gradients="autograd")),
        ("one_ulp", dataclasses.replace(config, lr=config.lr * (1 + 2 ** -23))))}
    paths_apart = max(_relative_weight_errors(weights["autograd"], weights["closed_form"]))
    one_ulp_apart = max(_relative_weight_errors(weights["one_ulp"], weights["closed_form"]))
    assert one_ulp_apart > 1000 * WEIGHT_RTOL and paths_apart < one_ulp_apart, (paths_apart, one_ulp_apart)


def test_precision_setting_is_checked_and_enters_the_run_key_only_when_set():
    assert "precision" not in keys.mappo_key(mappo.MAPPOConfig())  # the committed runs keep their keys
    assert keys.mappo_key(mappo.MAPPOConfig(precision="float64"))["precision"] == "float64"
    with pytest.raises(ValueError, match="precision must be one of"):
        mappo.MAPPOConfig(precision="float16")
    agent = mappo.MAPPO(mappo.MAPPOConfig(precision="float64", update_epochs=1), [0])
    agent.update(*_random_batch(300, distinct=10, seed=0))
    assert agent.flat.dtype == torch.float64 and agent.logits(np.zeros((1, 2, 4))).dtype == np.float64


def test_the_package_calls_no_internal_aten_operator():
    """Gradients are autograd's or written out with public torch ops: no ``torch.ops.aten`` anywhere."""
    package = Path(mappo.__file__).resolve().parents[1]
    sources = sorted(package.rglob("*.py"))
    assert package / "algos" / "mappo_fast.py" in sources
    offenders = [str(path.relative_to(package)) for path in sources if "torch.ops" in path.read_text(encoding="utf-8")]
    assert not offenders, offenders
