"""Console tools over the models' file contracts (``harness-validate``, ``cavitation-kratos-export``),
which a family's case may run as a user would.

May import core, tracking, metrics, launch, models and schemas.
"""
