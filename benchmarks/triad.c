/* A STREAM-style triad, a[i] = b[i] + s * c[i], with OpenMP: the reference the numpy bandwidth
 * probe is compared with. Usage: triad N REPEATS  ->  prints "best_seconds bytes_per_s" for the
 * best of REPEATS passes over N doubles, counting 3 * N * 8 bytes per pass (STREAM's convention). */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N REPEATS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int repeats = atoi(argv[2]);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory for N=%ld\n", n);
        return 1;
    }
    const double s = 3.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.5; }  /* first touch by the same threads */
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    double check = 0.0;
    for (long i = 0; i < n; i += n / 16 + 1) check += a[i];
    printf("%.9f %.6e %.1f\n", best, 3.0 * n * sizeof(double) / best, check);
    free(a); free(b); free(c);
    return 0;
}
