"""Discrete element model: spheres and disks, contact laws, walls, impacts, shear box.

Plain numpy/scipy library (no Hydra, no MLflow). Main entry points:
:class:`Material`, :class:`ContactLaw`, :class:`DEMSystem`, :func:`binary_impact`,
:mod:`models.dem.restitution`, :mod:`models.dem.closed_forms`, :mod:`models.dem.shear`.
"""
from models.dem.impact import ImpactResult, binary_impact, elastic_reference  # noqa: F401
from models.dem.laws import ContactLaw  # noqa: F401
from models.dem.materials import DEMInputError, Material  # noqa: F401
from models.dem.system import DEMSystem  # noqa: F401
from models.dem.walls import Servo, Wall  # noqa: F401
