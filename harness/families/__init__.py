"""Family adapters: one module per model family, ``run(cfg, ctx) -> CaseResult``.

See :mod:`harness.context` for the contract. A case config names its adapter in
``case.adapter`` as ``"harness.families.<family>:<function>"``.
"""
