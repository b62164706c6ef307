"""The direct shear reports its progress through a plain callable (no harness import)."""
from models.dem.shear import ShearBoxSpec, run_direct_shear


def test_direct_shear_progress_is_monotone_and_completes():
    calls = []
    spec = ShearBoxSpec(n_particles=16, columns=4, shear_speed=0.2, max_displacement=0.05,
                        settle_time=0.05, consolidation_time=0.05, n_output=40)
    run_direct_shear(spec, progress=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 100  # every 1 % of each of the three stages
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] > 0
    assert calls[-1][0] == calls[-1][1]  # the last call reports every step done
    assert all(d <= t for d, t in calls)
