// SPDX-License-Identifier: GPL-2.0
/*
 * bench-gemm: a general matrix multiplication C = A x B in double precision, the compute kernel on which the
 * overhead of perf stat and perf record is measured (as in Domingos et al., "Supporting RISC-V Performance
 * Counters Through Linux Performance Analysis Tools", which sizes GEMM runs by their duration).
 *
 * usage: bench-gemm M K N
 *   A is M x K, B is K x N, C is M x N; the default 400 450 420 takes about 1.5 guest seconds.
 *
 * Prints: ns (guest ns of the multiplication, without the initialisation), checksum (the sum of C, so the
 * compiler keeps the work and a wrong result shows), and the Rust driver's SBI calls during the
 * multiplication as sbi.NAME=COUNT.
 */
#include "bench.h"

int main(int argc, char **argv)
{
	long m = 400, k = 450, n = 420;
	struct sbi_stats s0, s1;
	double *a, *b, *c, sum = 0;
	uint64_t t0, t1;

	if (argc == 4) {
		m = atol(argv[1]);
		k = atol(argv[2]);
		n = atol(argv[3]);
	}
	if ((argc != 1 && argc != 4) || m <= 0 || k <= 0 || n <= 0) {
		fprintf(stderr, "usage: %s [M K N]\n", argv[0]);
		return 2;
	}
	a = malloc(sizeof(double) * m * k);
	b = malloc(sizeof(double) * k * n);
	c = calloc(m * n, sizeof(double));
	if (!a || !b || !c)
		die("malloc");
	for (long i = 0; i < m * k; i++)
		a[i] = (double)(i % 7) * 0.25 + 0.5;
	for (long i = 0; i < k * n; i++)
		b[i] = (double)(i % 5) * 0.5 - 0.25;

	settle();
	sbi_stats_read(&s0);
	t0 = now_ns();
	/* i-k-j order: the inner loop walks rows of B and C, so it streams through memory. */
	for (long i = 0; i < m; i++)
		for (long p = 0; p < k; p++) {
			double aip = a[i * k + p];

			for (long j = 0; j < n; j++)
				c[i * n + j] += aip * b[p * n + j];
		}
	t1 = now_ns();
	sbi_stats_read(&s1);
	for (long i = 0; i < m * n; i++)
		sum += c[i];
	printf("ns=%llu checksum=%.1f", (unsigned long long)(t1 - t0), sum);
	print_sbi_delta(&s0, &s1);
	printf("\n");
	return 0;
}
