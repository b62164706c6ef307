"""One set of integrator defaults (library = config group) and scaled finite-difference partials."""
from __future__ import annotations

import math

import numpy as np
import pytest
from omegaconf import OmegaConf

from harness.core.compose import compose, group_options
from models.integrators import get
from models.integrators.base import ResidualProblem
from models.integrators.jacobians import fd_increments, fd_residual_partials
from models.integrators.problems import get_problem
from models.integrators.residual import ReducedField


def test_every_integrator_option_composes_to_the_library_defaults():
    checked = 0
    for option in group_options("integrator"):
        cfg = OmegaConf.to_container(compose([f"integrator={option}"]).integrator, resolve=True)
        cls = _class(cfg["_target_"])
        if not hasattr(cls, "defaults"):
            continue  # exact_time_average (a time grid) and the Verlet steppers (dt only)
        for key, default in cls.defaults.items():
            if key in cfg and not (option == "ros2" and key == "n_steps"):  # the group's fixed-step choice
                assert cfg[key] == default or (isinstance(default, float) and math.isinf(default) and
                                               math.isinf(cfg[key])), f"{option}.{key}: {cfg[key]!r} != {default!r}"
                checked += 1
    assert checked >= 20
    assert get("cvode_bdf")().options["max_num_steps"] == 100000


def _class(target: str):
    import importlib

    mod, name = target.rsplit(".", 1)
    return getattr(importlib.import_module(mod), name)


def test_cvode_library_default_solves_a_problem_needing_more_than_500_steps_per_interval():
    p = get_problem("vdpol").problem
    t = np.array(p.t_span)
    sol = get("cvode_bdf")(rtol=1e-8, atol=1e-10).solve(p, t)
    assert sol.success and sol.stats.n_steps > 500
    short = get("cvode_bdf")(rtol=1e-8, atol=1e-10, max_num_steps=500).solve(p, t)
    assert not short.success and "max_num_steps=500" in short.failure_reason


def _scaled_dae(a: float, analytic: bool, typical: bool = False) -> ResidualProblem:
    """y1' = -w + a cos t, y2' = w, 0 = a[(w/a)^3 + w/a - (y1/a)^3 - y1/a] (w algebraic, = y1):
    the seed's index-1 test DAE written for unknowns of size a (units a)."""

    def residual(t, y, z):
        u, v = z[2] / a, y[0] / a
        return np.array([z[0] + z[2] - a * np.cos(t), z[1] - z[2], a * (u ** 3 + u - v ** 3 - v)])

    kw = {}
    if analytic:
        kw = dict(jac_z=lambda t, y, z: np.array([[1.0, 0, 1], [0, 1, -1], [0, 0, 3 * (z[2] / a) ** 2 + 1]]),
                  jac_y=lambda t, y, z: np.array([[0.0, 0], [0, 0], [-(3 * (y[0] / a) ** 2 + 1), 0]]),
                  jac_t=lambda t, y, z: np.array([a * np.sin(t), 0.0, 0.0]))
    if typical:
        kw.update(typical_y=[a, a], typical_z=[a, a, a])
    return ResidualProblem(residual, [a, 0.0], [0.0, a, 0.9 * a], (0.0, 2.0), **kw)


def _partials_error(a: float, **fd_kw) -> float:
    p = _scaled_dae(a, analytic=True)
    t, y, z = 0.6, np.array([0.7 * a, 0.2 * a]), np.array([0.1 * a, 0.3 * a, 0.7 * a])
    fd = fd_residual_partials(p.residual, t, y, z, **fd_kw)
    exact = (p.jac_z(t, y, z), p.jac_y(t, y, z), p.jac_t(t, y, z))
    return max(float(np.max(np.abs(f - e)) / np.max(np.abs(e))) for f, e in zip(fd, exact))


@pytest.mark.parametrize("a", [1e-4, 1.0, 1e4])
def test_scaled_increments_match_analytic_partials_at_every_scale(a):
    # measured: 0.9e-9 .. 2e-9 with the typical sizes given; the sqrt(eps) round-off floor
    assert _partials_error(a, typical_y=[a, a], typical_z=[a, a, a]) < 1e-8
    assert _partials_error(a) < 2e-8  # default typical 1: 9e-9 at a = 1e-4
    if a < 1:  # the former rule, an absolute 1e-7 step for |x| < 1, is 4e-7 off at a = 1e-4
        assert _partials_error(a, delta=1e-7) > 1e-7


def test_increment_rule():
    h = fd_increments(np.array([0.0, -2e-5, 3e4]), typical=np.array([1e-5, 1e-5, 1.0]))
    eps = np.finfo(float).eps
    np.testing.assert_allclose(h, math.sqrt(eps) * np.array([1e-5, 2e-5, 3e4]), rtol=1e-15)
    with pytest.raises(ValueError, match="typical_z"):
        ResidualProblem(lambda t, y, z: z, [1.0], [0.0], (0.0, 1.0), typical_z=[0.0])


def test_sensitivity_jacobian_from_fd_partials_equals_the_analytic_one_and_the_solution_agrees():
    a = 1e-4
    # reduced field: w = y1, so f = (-y1 + a cos t, y1) and J = [[-1, 0], [1, 0]], f_t = (-a sin t, 0)
    rf = ReducedField(_scaled_dae(a, analytic=False, typical=True), jacobian="sensitivity")
    ode = rf.to_ode()
    y = np.array([0.8 * a, 0.1 * a])
    np.testing.assert_allclose(ode.jac(0.5, y), [[-1.0, 0.0], [1.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(ode.f_t(0.5, y), [-a * math.sin(0.5), 0.0], atol=1e-9 * a)
    t = np.linspace(0.0, 2.0, 5)
    for name, kw in (("ros2_adaptive", dict(rtol=1e-6, atol=1e-8 * a)), ("cvode_bdf", dict(rtol=1e-6, atol=1e-8 * a))):
        ref = get(name)(**kw).solve(_scaled_dae(a, analytic=True), t).y
        fd = get(name)(**kw).solve(_scaled_dae(a, analytic=False), t).y
        assert np.max(np.abs(fd - ref)) / np.max(np.abs(ref)) < 1e-9, name
