"""The kind of every metric of every family adapter (harness.metrics.kinds), one table per module.

Each adapter module binds its table as ``METRIC_KINDS`` (the runner reads it from the module of
the adapter it ran). Keys are metric names or globs: exact names first, then the globs in
table order. Kinds: error (a distance from a reference), value (a model quantity), count (an
integer fact, a 0/1 flag, an exit code, an id), timing (wall time or a ratio of wall times),
memory (bytes).
"""
from __future__ import annotations

from typing import Dict

from harness.metrics.kinds import COUNT, ERROR, MEMORY, TIMING, VALUE

# timings every family reports the same way
_TIMINGS: Dict[str, str] = {
    "*_time_s": TIMING, "*_time_s_*": TIMING, "time_ratio*": TIMING, "*wall_time*": TIMING,
    "*_seconds": TIMING, "*speedup*": TIMING, "*overhead*": TIMING, "*per_s": TIMING, "*per_s_*": TIMING,
    "*throughput*": TIMING, "*realtime_factor": TIMING, "*seconds_per_step": TIMING, "*_per_second": TIMING,
    "*efficiency": TIMING, "*peak_mem*": MEMORY, "*_bytes": MEMORY, "*rss*": MEMORY, "*_mb": MEMORY,
    "*_mb_*": MEMORY,
}

BEAM: Dict[str, str] = {
    "energy_residual_full": ERROR, "energy_residual_reduced": ERROR, "energy_residual_ancf_drive": ERROR,
    "energy_residual_ancf_normal": ERROR, "energy_history_diff_full": ERROR, "energy_history_diff_reduced": ERROR,
    "external_work_diff_full": ERROR, "slider_violation_full": ERROR, "slider_violation_reduced": ERROR,
    "sigma_rglob_over_sigma1": VALUE, "retained_sigma2": VALUE, "skfem_freq_diff_max": ERROR,
    "n_dof_full": COUNT, "n_snap": COUNT, "r_snap": COUNT, "r_glob": COUNT, "snap_product": COUNT,
    "pool_rank": COUNT, "n_steps": COUNT, "blas_threads": COUNT,
    "offline_over_full_*": TIMING, "time_ratio_*": TIMING,
    **_TIMINGS,
    "rms_*": ERROR, "tip_rms_*": ERROR, "freq_error_*": ERROR, "*_error": ERROR,
    "freq_*_hz": VALUE, "max_*": VALUE, "tip_max_*": VALUE, "tangential_*": VALUE,
}

DEM: Dict[str, str] = {
    "contact_steps": COUNT, "gas_contact_steps": COUNT, "gas_n_particles": COUNT, "n_steps": COUNT,
    "n_particles": COUNT, "n_contacts": COUNT, "n_*": COUNT, "energy_monotone": COUNT, "peak_ge_residual": COUNT,
    "quasi_static": COUNT, "lammps_ranks": COUNT, "repeats": COUNT, "threads_*": COUNT,
    "ratio_to_lammps*": TIMING,
    "load_avg_*": TIMING,  # the machine's load during a benchmark: measured like a timing, never compared "contacts_per_particle_*": VALUE,
    "*_stress*": VALUE, "*_friction": VALUE, "peak_ratio": VALUE, "residual_ratio": VALUE, "inertial_number": VALUE,
    "*volumetric_strain": VALUE,
    **_TIMINGS,
    "e_*": ERROR, "lammps_e_*": ERROR, "*_error": ERROR, "*_error_*": ERROR, "diff_*": ERROR,
    "gas_max_position_diff": ERROR,
    "energy_drift": ERROR, "sliding_margin": VALUE,
    "E0": VALUE, "dt": VALUE, "gas_dt": VALUE, "hm_c": VALUE, "delta_over_w": VALUE, "spin": VALUE, "spin_ref": VALUE,
    "center_speed_three": VALUE, "rebound_two": VALUE, "restitution*": VALUE, "tangential_ratio*": VALUE,
    "*duration*": VALUE, "*overlap*": VALUE, "*rebound": VALUE, "max_force*": VALUE,
}

INTEGRATORS: Dict[str, str] = {
    "n_steps": COUNT, "n_accepted": COUNT, "n_rejected": COUNT, "n_residual_solves": COUNT, "nfev": COUNT,
    "njev": COUNT, "nlu": COUNT, "success": COUNT, "integrator_id": COUNT, "problem_id": COUNT,
    "descriptor_version": COUNT, "nfev_*": COUNT, "success_*": COUNT, "*.nfev": COUNT, "*.njev": COUNT,
    "*.nlu": COUNT, "*.n_steps": COUNT, "*.success": COUNT, "n_cores": COUNT, "threads": COUNT, "n_states_*": COUNT,
    "ros2_loop_compiled": COUNT, "ratio_*": TIMING, "wall_*": TIMING, "scd_*": ERROR, "rtol_*": VALUE,
    "t_jac": TIMING, "t_rhs": TIMING, "*.t_jac": TIMING, "*.t_rhs": TIMING, "overhead_per_step_us": TIMING,
    "*.overhead_per_step_us": TIMING, **_TIMINGS,
    "scd": ERROR, "*.scd": ERROR, "max_rel_error": ERROR, "*.max_rel_error": ERROR, "err_*": ERROR,
    "error_constant": VALUE, "h": VALUE, "rtol": VALUE, "y_end": VALUE, "*.rtol": VALUE,
}

LOAD_TRANSFER: Dict[str, str] = {
    "n_elements": COUNT, "n_nodes": COUNT, "n_pieces": COUNT, "nan_count": COUNT, "operator_nan_count": COUNT,
    "sign_violation": COUNT, "n_*": COUNT, "*_count": COUNT, "*exit_code": COUNT, "*files_left": COUNT,
    "*_leftovers": COUNT, "violations": COUNT, "bit_mismatches": COUNT, "metadata_mismatches": COUNT,
    "missing_checksums": COUNT, "wrong_units": COUNT, "kinds": COUNT, "missed_kinds": COUNT,
    "unreadable_rejected": COUNT, "interrupted_raised": COUNT, "configuration_hash_ok": COUNT,
    "version_ok": COUNT, "read_1_*": COUNT, "reject_*": COUNT, "*_rejected": COUNT, "reader_exact_message": COUNT,
    "double_count_detected": COUNT, "parents_in_tree": COUNT, "min_leaf_levels": COUNT,
    "unknown_dataset_kept": COUNT, "axis_points": COUNT, "operator_axis_nodes": COUNT, "conservative": COUNT,
    "peak_over_point_force": MEMORY, "ratio_to_raw_h5py": TIMING, "per_step_ratio_to_bare_csr": TIMING,
    "operator_mismatch": ERROR,
    **_TIMINGS,
    "e_*": ERROR, "export_e_*": ERROR, "*_error": ERROR, "*_error_*": ERROR, "rotation_invariance": ERROR,
    "exterior_load": ERROR,
    "pressure_1_0_vs_1_1": ERROR, "max_correction_rel": ERROR, "ring_error": ERROR,
    "F_M_max": VALUE, "J_B": VALUE, "J_M": VALUE, "axis_force": VALUE, "net_shear": VALUE,
    "operator_net_shear": VALUE, "sliding_wall_shear": VALUE, "operator_sliding_wall_shear": VALUE,
    "shear_1_0_max": VALUE, "*_N": VALUE, "*_Pa": VALUE, "*_m": VALUE, "*_J": VALUE,
}

# the CFD source of seed 000 (load_transfer_cfd, load_transfer_cfd_amr)
CFD: Dict[str, str] = {
    "impulse": VALUE, "force_peak": VALUE, "pressure_peak": VALUE, "area_error_max": ERROR, "violations": COUNT,
    "nan_count": COUNT, "time_steps": COUNT, "restart_max_diff": ERROR, "restart_state_diff": ERROR,
    "restart_stopped": COUNT, "restart_frames_before_stop": COUNT, "restart_frames_compared": COUNT,
    "restart_stop_time": VALUE, "patches_max": COUNT, "covered_wall_cells_max": COUNT, "levels_on_wall": COUNT,
    "observed_order_min": VALUE, "observed_order_finest": VALUE, "reference_shock_radius": VALUE,
    "order_deficit": ERROR,
    **_TIMINGS,
    "l1_error_*": ERROR, "shock_radius_error_cells_*": ERROR, "*_gci_fine": ERROR, "*_order": VALUE,
    "*_extrapolated": VALUE, "impulse_*": VALUE, "force_peak_*": VALUE,
}

# bench/slurm_overhead (bench_slurm): the same jobs on the basic launcher and on Slurm
SLURM_BENCH: Dict[str, str] = {
    "basic_wall_s": TIMING, "slurm_wall_s": TIMING, "slurm_ratio": TIMING, "slurm_overhead_per_job_s": TIMING,
    "slurm_queue_wait_median_s": TIMING, "slurm_run_median_s": TIMING, "slurm_jobs_completed": COUNT,
}

VESSEL: Dict[str, str] = {
    "ramp_time_s": VALUE, "fraction_time_s": VALUE,  # simulated times [s], not wall times
    "n_solves": COUNT, "n_steps": COUNT, "nfev": COUNT, "njev": COUNT, "passes": COUNT, "success": COUNT,
    "windows": COUNT, "*.n_solves": COUNT, "*.n_steps": COUNT, "*.nfev": COUNT, "*.njev": COUNT,
    "*.passes": COUNT, "*.success": COUNT, "*.windows": COUNT, "n_*": COUNT,
    **_TIMINGS,
    "*_error": ERROR, "*_error_*": ERROR, "*_excess": ERROR, "wrap_range_violation": ERROR,
    "energy_balance": ERROR, "*.energy_balance": ERROR, "balance_reduction": VALUE, "form_difference_at_tau": ERROR,
    "overshoot": VALUE, "chi_change": VALUE, "*.chi_change": VALUE, "damping_ratio": VALUE, "k_per_m": VALUE,
    "fraction_at_tau*": VALUE, "body_velocity_turned": VALUE, "jacobian_analytic": COUNT,
    "*timed_runs": TIMING,  # how many runs fit the benchmark's time budget: follows the wall time
    "threads": COUNT, "*updates_per_step": COUNT, "*max_position_diff*": ERROR, "*max_yaw_diff": ERROR,
    "*tolerance_dependence_m": ERROR, "mode_difference_m": ERROR, "rhs_over_step_dependence": VALUE,
    "track_length_m": VALUE, "*_s": VALUE, "*_N": VALUE, "*_J": VALUE,
}

# the finite-element peers (Kratos, DOLFINx, scikit-fem), plasticity and the handover to Kratos
KRATOS: Dict[str, str] = {
    "steps": COUNT, "nonconverged_steps": COUNT, "*_order": VALUE, "*rel_diff*": ERROR, "export_e_F": ERROR,
    "elastic_energy_balance": ERROR, "energy_balance": ERROR, "energy_balance_coarse": ERROR,
    "*_norm*": VALUE, "F_B": VALUE, "F_disk": VALUE, "common_area_fraction": VALUE, "peak_response*": VALUE,
    "external_work*": VALUE, "below_yield_plastic_strain": VALUE, "dissipation_*": VALUE,
    "elastic_residual_ratio": VALUE, "free_mean_response*": VALUE, "plastic_strain_max": VALUE, "residual_*": VALUE,
    "sigma_peak_elastic": VALUE, "yield_stress_above": VALUE,
    **LOAD_TRANSFER,
}

# benchmarks: never compared with a baseline (every metric of a case tagged bench); the kinds still say
# what each number is
BENCH: Dict[str, str] = {
    "cli_warmup_ran": COUNT, "*exit_code": COUNT, "closed_form_residual": ERROR, "integral": VALUE,
    "n_*": COUNT, "*_n_*": COUNT, "repeats": COUNT, "*threads*": COUNT, "*_jobs": COUNT, "*cases*": COUNT,
    **_TIMINGS, "*ratio*": TIMING, "*_ms": TIMING, "*_us": TIMING, "*_s": TIMING, "*mem*": MEMORY,
    "*error*": ERROR, "*diff*": ERROR, "scd*": ERROR, "*.scd": ERROR,
}
