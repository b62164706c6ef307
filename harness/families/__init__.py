"""Family adapters: one module per model family, ``run(cfg, ctx) -> CaseResult``.

May import tools, core, tracking, metrics, launch, models and schemas (not generic, nor anything above).

See :mod:`harness.core.context` for the contract. A case config names its adapter in
``case.adapter`` as ``"harness.families.<family>:<function>"``.
"""
