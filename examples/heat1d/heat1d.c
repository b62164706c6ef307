/*
 * heat1d: the 1-D heat equation u_t = alpha u_xx on [0, L], u(0) = u(L) = 0,
 * u(x, 0) = sin(pi x / L), by explicit finite differences (FTCS): second-order central
 * differences in space on nx intervals, forward Euler in time with dt = r dx^2 / alpha
 * (r <= 1/2 for stability; the step is shortened so that t_end is reached exactly).
 * At fixed r the error is O(dx^2) in space and O(dt) = O(dx^2) in time.
 *
 * usage: heat1d NX ALPHA L T_END R OUT.csv OUT.json
 * writes OUT.csv (columns x, u: the solution at t_end) and OUT.json (nx, n_steps, dt, t_end).
 * Exit codes: 0 done, 2 bad arguments, 3 cannot write.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int parse_double(const char *s, double *out) {
    char *end = NULL;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s NX ALPHA L T_END R OUT.csv OUT.json\n", argv[0]);
        return 2;
    }
    char *end = NULL;
    long nx = strtol(argv[1], &end, 10);
    double alpha, length, t_end, r;
    if (*end != '\0' || nx < 2 || !parse_double(argv[2], &alpha) || !parse_double(argv[3], &length) ||
        !parse_double(argv[4], &t_end) || !parse_double(argv[5], &r) || alpha <= 0.0 || length <= 0.0 ||
        t_end <= 0.0 || r <= 0.0 || r > 0.5) {
        fprintf(stderr, "heat1d: bad arguments (need NX >= 2, ALPHA, L, T_END > 0, 0 < R <= 0.5)\n");
        return 2;
    }
    const double pi = 3.14159265358979323846;
    const double dx = length / (double)nx;
    const double dt_max = r * dx * dx / alpha;
    const long n_steps = (long)ceil(t_end / dt_max - 1e-9);
    const double dt = t_end / (double)n_steps;
    const double lambda = alpha * dt / (dx * dx);

    double *u = malloc((size_t)(nx + 1) * sizeof(double));
    double *v = malloc((size_t)(nx + 1) * sizeof(double));
    if (u == NULL || v == NULL) {
        fprintf(stderr, "heat1d: out of memory\n");
        return 3;
    }
    for (long i = 0; i <= nx; ++i) u[i] = sin(pi * (double)i * dx / length);
    u[0] = 0.0;
    u[nx] = 0.0;
    for (long n = 0; n < n_steps; ++n) {
        v[0] = 0.0;
        v[nx] = 0.0;
        for (long i = 1; i < nx; ++i) v[i] = u[i] + lambda * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        double *tmp = u;
        u = v;
        v = tmp;
    }

    FILE *csv = fopen(argv[6], "w");
    if (csv == NULL) {
        fprintf(stderr, "heat1d: cannot write %s\n", argv[6]);
        return 3;
    }
    fprintf(csv, "x,u\n");
    for (long i = 0; i <= nx; ++i) fprintf(csv, "%.17g,%.17g\n", (double)i * dx, u[i]);
    fclose(csv);
    FILE *js = fopen(argv[7], "w");
    if (js == NULL) {
        fprintf(stderr, "heat1d: cannot write %s\n", argv[7]);
        return 3;
    }
    fprintf(js, "{\"nx\": %ld, \"n_steps\": %ld, \"dt\": %.17g, \"t_end\": %.17g, \"lambda\": %.17g}\n",
            nx, n_steps, dt, t_end, lambda);
    fclose(js);
    printf("heat1d: nx=%ld n_steps=%ld dt=%.6g lambda=%.6g\n", nx, n_steps, dt, lambda);
    free(u);
    free(v);
    return 0;
}
