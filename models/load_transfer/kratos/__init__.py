"""Kratos MPMApplication run of the transferred loads (issue 8).

runtime   quiet import, versions, thread count
loads     a kratos-point-loads v1 file in meridian coordinates; one-to-one condition matching
builder   ProjectParameters and model parts built in Python (use_input_model_part)
process   the point-load process (exact step averages, records, the 2 % abort)
analysis  run_mpm(): one Kratos run
workflow  source -> table -> export -> Kratos -> FE cross-check -> comparison

Only ``process`` and ``analysis.run_mpm`` import Kratos (lazily); the rest is plain numpy.
"""
