/*
 * heat1d_mms: the 1-D heat equation with a variable conductivity and a source,
 *   u_t = d/dx (k(x) du/dx) + f(x, t) on [0, L], u = g at both ends, u(x, 0) = u0(x),
 * by explicit finite differences (FTCS, conservative: k at the cell faces). The source f, the
 * conductivity k and the exact solution u_exact (for the boundary and initial values) come from
 * the header the harness generates from a manufactured solution (mms.h, functions of (x, t)).
 * dt = r dx^2 / max k (r <= 1/2 for stability; shortened so that t_end is reached exactly):
 * the error is O(dx^2) + O(dt) = O(dx^2).
 *
 * usage: heat1d_mms NX L T_END R OUT.csv
 * writes OUT.csv (columns x, u: the solution at t_end). Exit codes: 0 done, 2 bad arguments, 3 cannot write.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mms.h"

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s NX L T_END R OUT.csv\n", argv[0]);
        return 2;
    }
    long nx = strtol(argv[1], NULL, 10);
    double length = atof(argv[2]), t_end = atof(argv[3]), r = atof(argv[4]);
    if (nx < 2 || length <= 0.0 || t_end <= 0.0 || r <= 0.0 || r > 0.5) {
        fprintf(stderr, "heat1d_mms: bad arguments (need NX >= 2, L, T_END > 0, 0 < R <= 0.5)\n");
        return 2;
    }
    const double dx = length / (double)nx;
    double *u = malloc((size_t)(nx + 1) * sizeof(double));
    double *v = malloc((size_t)(nx + 1) * sizeof(double));
    double *kf = malloc((size_t)nx * sizeof(double)); /* k at the faces x_{i+1/2} */
    if (u == NULL || v == NULL || kf == NULL) return 3;
    double k_max = 0.0;
    for (long i = 0; i < nx; ++i) {
        kf[i] = k(((double)i + 0.5) * dx, 0.0);
        if (kf[i] > k_max) k_max = kf[i];
    }
    const long n_steps = (long)ceil(t_end / (r * dx * dx / k_max) - 1e-9);
    const double dt = t_end / (double)n_steps;
    for (long i = 0; i <= nx; ++i) u[i] = u_exact((double)i * dx, 0.0);
    for (long n = 0; n < n_steps; ++n) {
        const double t = (double)n * dt;
        for (long i = 1; i < nx; ++i) {
            const double flux = kf[i] * (u[i + 1] - u[i]) - kf[i - 1] * (u[i] - u[i - 1]);
            v[i] = u[i] + dt * (flux / (dx * dx) + f((double)i * dx, t));
        }
        v[0] = u_exact(0.0, t + dt);
        v[nx] = u_exact(length, t + dt);
        double *tmp = u;
        u = v;
        v = tmp;
    }
    FILE *csv = fopen(argv[5], "w");
    if (csv == NULL) return 3;
    fprintf(csv, "x,u\n");
    for (long i = 0; i <= nx; ++i) fprintf(csv, "%.17g,%.17g\n", (double)i * dx, u[i]);
    fclose(csv);
    printf("heat1d_mms: nx=%ld n_steps=%ld dt=%.6g\n", nx, n_steps, dt);
    free(u);
    free(v);
    free(kf);
    return 0;
}
