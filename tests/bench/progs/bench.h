/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the benchmark programs: the events they open, guest time, and the Rust driver's SBI call
 * statistics.
 *
 * Every program prints one result line of space-separated key=value fields, for example
 *   ns_per_op=15862.3 ops=20000 sbi.counter_start=20000 ...
 * which the guest script prefixes with the benchmark's name. Times come from clock_gettime(CLOCK_MONOTONIC):
 * in QEMU's deterministic mode (-icount shift=0) a guest nanosecond is one guest instruction, so the figures
 * measure instructions executed, whatever the host's load.
 */
#ifndef RPMU_BENCH_H
#define RPMU_BENCH_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 16
#define SBI_STATS "/sys/kernel/debug/riscv_pmu_sbi_rust/sbi_calls"
#define MAX_STATS 32

#define HW_CACHE(cache, op, result) \
	((cache) | (PERF_COUNT_HW_CACHE_OP_##op << 8) | (PERF_COUNT_HW_CACHE_RESULT_##result << 16))
#define FW_EVENT(code) ((1ULL << 63) | (code))

struct bench_event {
	const char *name;
	uint32_t type;
	uint64_t config;
};

/*
 * The hardware events QEMU's virt machine counts, in the order "hw:K" takes them; K above 5 starts over, so
 * hw:8 counts cycles, instructions and dTLB-load-misses on a second counter each.
 */
static const struct bench_event hw_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(PERF_COUNT_HW_CACHE_DTLB, READ, MISS) },
	{ "dTLB-store-misses", PERF_TYPE_HW_CACHE, HW_CACHE(PERF_COUNT_HW_CACHE_DTLB, WRITE, MISS) },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(PERF_COUNT_HW_CACHE_ITLB, READ, MISS) },
};

/* SBI firmware events (SBI PMU, Table "firmware events"): counted by the firmware, read with an SBI call. */
static const struct bench_event fw_events[] = {
	{ "fw-set-timer", PERF_TYPE_RAW, FW_EVENT(5) },
	{ "fw-illegal-insn", PERF_TYPE_RAW, FW_EVENT(4) },
	{ "fw-ipi-sent", PERF_TYPE_RAW, FW_EVENT(6) },
};

/*
 * The software event of the floor: perf core schedules it in and out like any other event, but its PMU touches
 * no hardware and it counts nothing while the benchmarks run (they take no page faults in their timed loops).
 */
static const struct bench_event sw_event = { "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS };

struct event_set {
	int n;
	struct bench_event ev[MAX_EVENTS];
};

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * parse_events: "none", or a comma-separated list of KIND:COUNT with KIND hw, fw or sw, e.g. "hw:5,fw:3".
 */
static inline int parse_events(const char *spec, struct event_set *set)
{
	char buf[128], *tok, *save;

	set->n = 0;
	if (!strcmp(spec, "none"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		int k = colon ? atoi(colon + 1) : 0;

		if (!colon || k < 1 || set->n + k > MAX_EVENTS)
			return -1;
		*colon = 0;
		if (strcmp(tok, "hw") && strcmp(tok, "sw") && (strcmp(tok, "fw") || k > 3))
			return -1;
		for (int i = 0; i < k; i++) {
			if (!strcmp(tok, "hw"))
				set->ev[set->n++] = hw_events[i % 5];
			else if (!strcmp(tok, "fw"))
				set->ev[set->n++] = fw_events[i];
			else
				set->ev[set->n++] = sw_event;
		}
	}
	return 0;
}

static inline int open_event(const struct bench_event *ev, int group_fd, uint64_t read_format)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = ev->type;
	attr.config = ev->config;
	attr.read_format = read_format;
	/* Counting on this task only: a child forked later is not monitored. */
	attr.inherit = 0;
	return syscall(SYS_perf_event_open, &attr, 0, -1, group_fd, 0);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * settle: called shortly before a timed region, so that every run of it starts in the same state. It first
 * sleeps, which lets the kernel finish the deferred work of what ran before (RCU callbacks of an exited
 * process, for example) while nothing is timed, then waits for a timer tick: a tick costs tens of guest
 * microseconds, and a region that starts right after one always holds the same number of them.
 */
static inline void settle(void)
{
	uint64_t prev, t;

	usleep(50000);
	prev = now_ns();
	for (;;) {
		t = now_ns();
		/* Consecutive reads are well under a microsecond apart unless an interrupt came between them. */
		if (t - prev > 5000)
			break;
		prev = t;
	}
}

/*
 * The Rust driver's SBI call statistics, summed over CPUs per column. The file's first line names the columns;
 * without the file (the C driver) there are none.
 */
struct sbi_stats {
	int n;
	char name[MAX_STATS][32];
	uint64_t val[MAX_STATS];
};

static inline void sbi_stats_read(struct sbi_stats *st)
{
	char line[1024], *tok, *save;
	FILE *f = fopen(SBI_STATS, "r");

	st->n = 0;
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		/* The first column is the CPU number, which is not summed. */
		tok = strtok_r(line, " \n", &save);
		while ((tok = strtok_r(NULL, " \n", &save)) && st->n < MAX_STATS) {
			snprintf(st->name[st->n], sizeof(st->name[0]), "%s", tok);
			st->val[st->n++] = 0;
		}
	}
	while (fgets(line, sizeof(line), f)) {
		int i = 0;

		tok = strtok_r(line, " \n", &save);
		while ((tok = strtok_r(NULL, " \n", &save)) && i < st->n)
			st->val[i++] += strtoull(tok, NULL, 10);
	}
	fclose(f);
}

/* print_sbi_delta: " sbi.NAME=COUNT" for every column that changed between two snapshots. */
static inline void print_sbi_delta(const struct sbi_stats *a, const struct sbi_stats *b)
{
	for (int i = 0; i < a->n && i < b->n; i++)
		if (b->val[i] != a->val[i])
			printf(" sbi.%s=%llu", a->name[i], (unsigned long long)(b->val[i] - a->val[i]));
}

#endif
