// SPDX-License-Identifier: GPL-2.0
/*
 * papi_gemm: counts a naive double-precision GEMM (C += A * B, N x N) through PAPI's API.
 *
 * usage: papi_gemm [N] [EVENT...]
 *        papi_gemm --perf [N]
 *   N       the matrix size (default 64)
 *   EVENT   PAPI event names (presets such as PAPI_TOT_INS or native names such as
 *           perf::PERF_COUNT_HW_INSTRUCTIONS:u); default: PAPI_TOT_INS PAPI_TOT_CYC, and for each of them
 *           that PAPI does not offer, the generic perf event libpfm4 names
 *           (perf::PERF_COUNT_HW_INSTRUCTIONS, perf::PERF_COUNT_HW_CPU_CYCLES).
 *
 * The event set counts user mode only (PAPI_DOM_USER). Output, one line each:
 *   # comment lines (PAPI's version, the events, the matrix checksum)
 *   value papi_gemm_<EVENT> <COUNT>   (EVENT with every character other than [A-Za-z0-9_] turned into '_')
 *   not ok papi_gemm_<STEP> <PAPI error> when a PAPI call fails (exit status 1)
 * The exit status is 0 when every event counted.
 *
 * --perf counts the same GEMM without PAPI, through perf_event_open with the generic hardware events that
 * libpfm4's perf table encodes for perf::PERF_COUNT_HW_INSTRUCTIONS:u and perf::PERF_COUNT_HW_CPU_CYCLES:u
 * (PERF_TYPE_HARDWARE, user mode, one group): a control showing what the kernel counts where PAPI cannot.
 * It prints value papi_gemm_perf_instructions_u and papi_gemm_perf_cycles_u.
 */
#include <linux/perf_event.h>
#include <papi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_EVENTS 8

static void fail(const char *step, int ret)
{
	printf("not ok papi_gemm_%s %s (%d)\n", step, PAPI_strerror(ret), ret);
	exit(1);
}

/* The event name as a value name: [A-Za-z0-9_] kept, everything else '_'. */
static void value_name(const char *event, char *out, size_t size)
{
	size_t i;

	for (i = 0; event[i] && i + 1 < size; i++) {
		char c = event[i];

		out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
	}
	out[i] = '\0';
}

/* Naive triple loop; noinline so that the counted code is the same whatever the caller looks like. */
static void __attribute__((noinline)) gemm(int n, const double *a, const double *b, double *c)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double s = c[i * n + j];

			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

static void fill(int n, double *a, double *b)
{
	for (int i = 0; i < n * n; i++) {
		a[i] = (double)(i % 7) - 3.0;
		b[i] = (double)(i % 5) * 0.5;
	}
}

static double checksum(int n, const double *c)
{
	double sum = 0;

	for (int i = 0; i < n * n; i++)
		sum += c[i];
	return sum;
}

static int perf_open(uint64_t config, int group)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(attr),
		.config = config,
		.disabled = group < 0,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.read_format = PERF_FORMAT_GROUP,
	};

	return syscall(SYS_perf_event_open, &attr, 0, -1, group, 0);
}

/* The control: the same GEMM counted through perf_event_open directly. */
static int perf_mode(int n)
{
	struct { uint64_t nr, v[2]; } r;
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
	double *c = calloc((size_t)n * n, sizeof(double));
	int g, m;

	if (!a || !b || !c) {
		printf("not ok papi_gemm_perf_alloc out of memory\n");
		return 1;
	}
	fill(n, a, b);
	g = perf_open(PERF_COUNT_HW_INSTRUCTIONS, -1);
	m = g < 0 ? -1 : perf_open(PERF_COUNT_HW_CPU_CYCLES, g);
	if (g < 0 || m < 0) {
		printf("not ok papi_gemm_perf_open perf_event_open failed\n");
		return 1;
	}
	ioctl(g, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
	ioctl(g, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	gemm(n, a, b, c);
	ioctl(g, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
	if (read(g, &r, sizeof(r)) != sizeof(r) || r.nr != 2) {
		printf("not ok papi_gemm_perf_read short read\n");
		return 1;
	}
	printf("# gemm %dx%d checksum %.1f (perf_event_open)\n", n, n, checksum(n, c));
	printf("value papi_gemm_perf_instructions_u %llu\n", (unsigned long long)r.v[0]);
	printf("value papi_gemm_perf_cycles_u %llu\n", (unsigned long long)r.v[1]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *defaults[][2] = {
		{ "PAPI_TOT_INS", "perf::PERF_COUNT_HW_INSTRUCTIONS" },
		{ "PAPI_TOT_CYC", "perf::PERF_COUNT_HW_CPU_CYCLES" },
	};
	const char *names[MAX_EVENTS];
	long long counts[MAX_EVENTS];
	int nevents = 0, set = PAPI_NULL, ret, n = 64;
	double *a, *b, *c;

	if (argc > 1 && !strcmp(argv[1], "--perf"))
		return perf_mode(argc > 2 ? atoi(argv[2]) : 64);
	if (argc > 1)
		n = atoi(argv[1]);
	if (n <= 0 || n > 2048) {
		fprintf(stderr, "usage: %s [N] [EVENT...]\n", argv[0]);
		return 2;
	}

	ret = PAPI_library_init(PAPI_VER_CURRENT);
	if (ret != PAPI_VER_CURRENT)
		fail("library_init", ret < 0 ? ret : PAPI_EINVAL);
	printf("# PAPI %d.%d.%d.%d\n", PAPI_VERSION_MAJOR(ret), PAPI_VERSION_MINOR(ret), PAPI_VERSION_REVISION(ret),
	       PAPI_VERSION_INCREMENT(ret));

	ret = PAPI_create_eventset(&set);
	if (ret != PAPI_OK)
		fail("create_eventset", ret);
	/* The domain belongs to the event set's component: assign it (cpu component 0, perf_event) first. */
	ret = PAPI_assign_eventset_component(set, 0);
	if (ret != PAPI_OK)
		fail("assign_component", ret);
	ret = PAPI_set_opt(PAPI_DOMAIN, &(PAPI_option_t){ .domain = { .eventset = set, .domain = PAPI_DOM_USER } });
	if (ret != PAPI_OK)
		fail("set_domain_user", ret);

	if (argc > 2) {
		for (int i = 2; i < argc && nevents < MAX_EVENTS; i++)
			names[nevents++] = argv[i];
	} else {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
			int code;

			/* A preset PAPI offers here, or else the generic perf event it stands for. */
			if (PAPI_event_name_to_code(defaults[i][0], &code) == PAPI_OK && PAPI_query_event(code) == PAPI_OK)
				names[nevents++] = defaults[i][0];
			else
				names[nevents++] = defaults[i][1];
		}
	}
	for (int i = 0; i < nevents; i++) {
		ret = PAPI_add_named_event(set, names[i]);
		if (ret != PAPI_OK) {
			printf("# PAPI_add_named_event(%s): %s\n", names[i], PAPI_strerror(ret));
			fail("add_event", ret);
		}
		printf("# event %d: %s\n", i, names[i]);
	}

	a = malloc(sizeof(double) * n * n);
	b = malloc(sizeof(double) * n * n);
	c = calloc((size_t)n * n, sizeof(double));
	if (!a || !b || !c) {
		printf("not ok papi_gemm_alloc out of memory\n");
		return 1;
	}
	fill(n, a, b);

	ret = PAPI_start(set);
	if (ret != PAPI_OK)
		fail("start", ret);
	gemm(n, a, b, c);
	ret = PAPI_stop(set, counts);
	if (ret != PAPI_OK)
		fail("stop", ret);

	printf("# gemm %dx%d checksum %.1f\n", n, n, checksum(n, c));
	for (int i = 0; i < nevents; i++) {
		char v[128];

		value_name(names[i], v, sizeof(v));
		printf("value papi_gemm_%s %lld\n", v, counts[i]);
	}
	PAPI_cleanup_eventset(set);
	PAPI_destroy_eventset(&set);
	PAPI_shutdown();
	return 0;
}
