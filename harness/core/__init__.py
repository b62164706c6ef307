"""One case run: composition, typed configs, the runner (adapter -> metrics -> gates -> records),
run context, manifest, atomic writes, input resolution, config errors, interruption, regressions,
limits of sizes and arguments (limits.py: refused before anything runs); the user's project (its
config directories, its root) and where the shipped conf/ lives.

May import tracking, metrics, launch, models and schemas; families and generic are found by name.
"""
