"""A user's DOLFINx Poisson solver (P1), run by Debian's python3 in its own process.

usage: /usr/bin/python3 dolfinx_poisson.py N OUT.xdmf

Solves -laplace(u) = f on the unit square with u = u_exact on the boundary, on an N x N mesh of
triangles; f and u_exact come from the Python code the harness generated into the working
directory (mms.py, numpy functions of (x, y)). Writes the mesh and the P1 solution (point data
``u``) to OUT.xdmf (+ .h5). Exit code 2 for bad arguments.
"""
import importlib.util
import sys
from pathlib import Path

import ufl
from dolfinx import fem, io, mesh
from dolfinx.fem.petsc import LinearProblem
from mpi4py import MPI


def main(argv):
    if len(argv) != 3 or not argv[1].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    n, out = int(argv[1]), argv[2]
    spec = importlib.util.spec_from_file_location("mms", Path.cwd() / "mms.py")
    mms = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mms)
    domain = mesh.create_unit_square(MPI.COMM_WORLD, n, n, mesh.CellType.triangle)
    V = fem.FunctionSpace(domain, ("Lagrange", 1))
    u_bc = fem.Function(V)
    u_bc.interpolate(lambda x: mms.u_exact(x[0], x[1]))
    domain.topology.create_connectivity(domain.topology.dim - 1, domain.topology.dim)
    facets = mesh.exterior_facet_indices(domain.topology)
    bc = fem.dirichletbc(u_bc, fem.locate_dofs_topological(V, domain.topology.dim - 1, facets))
    # the source term as a quadratic interpolant: its own error stays below the P1 error
    Q = fem.FunctionSpace(domain, ("Lagrange", 2))
    f = fem.Function(Q)
    f.interpolate(lambda x: mms.f(x[0], x[1]))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx
    L = f * v * ufl.dx
    uh = LinearProblem(a, L, bcs=[bc], petsc_options={"ksp_type": "preonly", "pc_type": "lu"}).solve()
    uh.name = "u"
    with io.XDMFFile(domain.comm, out, "w") as xdmf:
        xdmf.write_mesh(domain)
        xdmf.write_function(uh)
    print(f"dolfinx_poisson: n={n} dofs={V.dofmap.index_map.size_global}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
