"""Six-DOF vessel manoeuvring model (seed 002): (M + A) nu' = sum F, CVODE BDF by default.

Plain library (numpy/scipy/yaml): data files validated against ``schemas/vessel-v1.yaml``,
load models, once-per-output-step actuator/filter/RAO updates, closed-form references.
"""
from models.vessel.build import build_vessel  # noqa: F401
from models.vessel.data import VesselData, load  # noqa: F401
from models.vessel.forces import FORCE_MODELS, Environment  # noqa: F401
from models.vessel.schema import VesselDataError  # noqa: F401
from models.vessel.vessel import Demands, Vessel, VesselResult  # noqa: F401
