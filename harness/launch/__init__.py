"""Launcher integrations and every use of another library's internals (Hydra, OmegaConf,
joblib/loky, Ray, gunicorn, MLflow's sqlite schema), each checked at import with a plain fallback.

Imports nothing else of harness/.
"""
