// SPDX-License-Identifier: GPL-2.0
/*
 * bench-ctxsw: the cost of a context switch with counting events on one side. Two processes pass a byte back
 * and forth through two pipes, so that every round trip puts each to sleep and wakes it again; the events are
 * opened on the parent before the child exists, without inheritance, so every round trip schedules the
 * monitored task out and in while the child runs unmonitored. (Were both sides monitored, perf core would swap
 * their equal contexts without touching the PMU.)
 *
 * usage: bench-ctxsw ROUNDS EVENTS
 *   EVENTS  "none" or KIND:COUNT,... with KIND hw, fw or sw (see bench.h), e.g. hw:4 or hw:5,fw:3
 *
 * Prints: ns_per_op (guest ns per round trip), ops, switches (the parent's context switches during the timed
 * round trips), events, scheduled (1 if every event counted all the time, 0 if perf multiplexed them), and the
 * Rust driver's SBI calls during the timed round trips as sbi.NAME=COUNT.
 */
#include <sys/wait.h>

#include "bench.h"

static long ctxt_switches(void)
{
	char line[256];
	long n = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		die("/proc/self/status");
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			n += atol(line + 24);
		else if (!strncmp(line, "nonvoluntary_ctxt_switches:", 27))
			n += atol(line + 27);
	}
	fclose(f);
	return n;
}

static void transfer(int out, int in, long rounds)
{
	char c = 0;

	for (long i = 0; i < rounds; i++)
		if (write(out, &c, 1) != 1 || read(in, &c, 1) != 1)
			die("pipe transfer");
}

int main(int argc, char **argv)
{
	/* Warm-up round trips before the timed ones: the first switches fault pages in and map counters. */
	const long warmup = 200;
	int to_child[2], to_parent[2], fd[MAX_EVENTS], scheduled = 1;
	struct event_set set;
	struct sbi_stats s0, s1;
	long rounds, sw0, sw1;
	uint64_t t0, t1;
	pid_t pid;

	if (argc != 3 || (rounds = atol(argv[1])) <= 0 || parse_events(argv[2], &set)) {
		fprintf(stderr, "usage: %s ROUNDS none|KIND:COUNT[,KIND:COUNT]...\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < set.n; i++) {
		fd[i] = open_event(&set.ev[i], -1,
				   PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING);
		if (fd[i] < 0)
			die(set.ev[i].name);
	}
	if (pipe(to_child) || pipe(to_parent))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char c;

		for (long i = 0; i < warmup + rounds; i++)
			if (read(to_child[0], &c, 1) != 1 || write(to_parent[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	transfer(to_child[1], to_parent[0], warmup);
	/* The statistics are read after settle(), whose sleep is a switch of its own. */
	settle();
	sbi_stats_read(&s0);
	sw0 = ctxt_switches();
	t0 = now_ns();
	transfer(to_child[1], to_parent[0], rounds);
	t1 = now_ns();
	sw1 = ctxt_switches();
	sbi_stats_read(&s1);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < set.n; i++) {
		uint64_t rd[3];

		if (read(fd[i], rd, sizeof(rd)) != sizeof(rd))
			die("read");
		if (rd[2] == 0 || rd[2] != rd[1])
			scheduled = 0;
		close(fd[i]);
	}
	printf("ns_per_op=%.1f ops=%ld switches=%ld events=%d scheduled=%d", (double)(t1 - t0) / rounds, rounds,
	       sw1 - sw0, set.n, scheduled);
	print_sbi_delta(&s0, &s1);
	printf("\n");
	return 0;
}
