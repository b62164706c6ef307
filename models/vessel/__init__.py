"""Six-DOF vessel manoeuvring model (seed 002): (M + A) nu' = sum F, CVODE BDF by default.

Plain library (numpy/scipy/yaml): data files validated against ``schemas/vessel-v1.yaml``,
load models, once-per-output-step actuator/filter/RAO updates, closed-form references.

>>> import models.integrators as integrators
>>> from models.vessel import build_vessel
>>> v = build_vessel("models/vessel/data/tanker.yaml", forces=["restoring", "linear_damping"])
>>> res = v.simulate(integrators.get("cvode_bdf")(), 5.0, 0.5)
>>> res.t.shape
(11,)

Your own vessel: copy ``models/vessel/data/tanker.yaml``, edit it, and pass its path
(absolute, or relative to the working directory) as ``data_file``.
"""
from models.vessel import reference
from models.vessel.build import build_vessel, resolve_data_file
from models.vessel.data import VesselData, load
from models.vessel.forces import FORCE_MODELS, Environment
from models.vessel.frames import body_to_inertial, inertial_to_body, kinematics, wrap_to_pi
from models.vessel.schema import VesselDataError, validate
from models.vessel.vessel import Demands, Vessel, VesselResult

__all__ = ["build_vessel", "resolve_data_file", "load", "validate", "Vessel", "VesselResult", "VesselData",
           "Demands", "Environment", "FORCE_MODELS", "VesselDataError", "body_to_inertial", "inertial_to_body",
           "kinematics", "wrap_to_pi", "reference"]
