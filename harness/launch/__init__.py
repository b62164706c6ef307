"""Launcher integrations and every use of another library's internals (Hydra, OmegaConf,
joblib/loky, Ray, gunicorn, MLflow's sqlite schema), each checked at import with a plain fallback;
the Slurm launcher (slurm_launcher, slurm_queue, slurm_job) and the resume sweeper.

Imports nothing else of harness/.
"""
