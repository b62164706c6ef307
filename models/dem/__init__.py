"""Discrete element model: spheres and disks, contact laws, walls, impacts, shear box.

Plain numpy/scipy library (no Hydra, no MLflow). A steel sphere on a nylon one:

>>> from models.dem import Material, ContactLaw, binary_impact, elastic_reference
>>> steel, nylon = Material(E=210e9, nu=0.29, density=7850.0), Material(E=2.5e9, nu=0.4, density=1140.0)
>>> r = binary_impact(steel, 0.005, nylon, 0.005, v_n=1.0, law=ContactLaw("hertz"))
>>> ref, (E_star, R_star, m_star) = elastic_reference(steel, 0.005, nylon, 0.005, 1.0, ContactLaw("hertz"))
>>> abs(r.max_force / ref.max_force - 1) < 1e-3
True

Modules: :mod:`models.dem.restitution` (restitution laws and their inverses),
:mod:`models.dem.closed_forms` (Hertz and linear impacts), :mod:`models.dem.shear` (direct
shear box), :mod:`models.dem.scenarios`, :mod:`models.dem.lammps_peer` (LAMMPS as a peer).
"""
from models.dem import lammps_peer
from models.dem.closed_forms import ElasticImpact, hertz_impact, linear_impact
from models.dem.impact import ImpactResult, binary_impact, elastic_reference, incidence_velocity
from models.dem.laws import ContactLaw
from models.dem.materials import (DEMInputError, Material, effective_mass, effective_modulus, effective_radius,
                                  effective_shear_modulus)
from models.dem.restitution import e_kelvin_voigt_eq22, e_spring_dashpot, hm_damping_from_restitution, hm_restitution
from models.dem.shear import ShearBoxSpec, ShearResult, run_direct_shear
from models.dem.system import DEMSystem
from models.dem.walls import Servo, Wall

__all__ = ["Material", "ContactLaw", "DEMSystem", "Wall", "Servo", "DEMInputError",
           "binary_impact", "elastic_reference", "incidence_velocity", "ImpactResult",
           "ElasticImpact", "hertz_impact", "linear_impact",
           "effective_modulus", "effective_shear_modulus", "effective_radius", "effective_mass",
           "e_spring_dashpot", "e_kelvin_voigt_eq22", "hm_restitution", "hm_damping_from_restitution",
           "ShearBoxSpec", "ShearResult", "run_direct_shear", "lammps_peer"]
