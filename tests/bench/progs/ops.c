// SPDX-License-Identifier: GPL-2.0
/*
 * bench-ops: the cost of one perf operation on an event of this task, repeated N times.
 *
 * usage: bench-ops OP N EVENTS
 *   OP      read     read() of the first event's count
 *           toggle   PERF_EVENT_IOC_DISABLE then PERF_EVENT_IOC_ENABLE on the first event
 *           open     perf_event_open(2) of the first event (enabled, so it is scheduled onto a counter), then
 *                    close(2)
 *           group    read() of a group of all the events with PERF_FORMAT_GROUP, the first one leading
 *   EVENTS  KIND:COUNT,... as in bench.h, e.g. hw:1, fw:1, sw:1, hw:4
 *
 * Prints: ns_per_op (guest ns per operation), ops, events, and the Rust driver's SBI calls during the timed
 * operations as sbi.NAME=COUNT.
 */
#include <sys/ioctl.h>

#include "bench.h"

int main(int argc, char **argv)
{
	/* Warm-up operations before the timed ones. */
	const long warmup = 100;
	int fd[MAX_EVENTS];
	uint64_t buf[4 + 2 * MAX_EVENTS], t0, t1;
	struct event_set set;
	struct sbi_stats s0, s1;
	const char *op;
	long n;
	int group;

	if (argc != 4 || (n = atol(argv[2])) <= 0 || parse_events(argv[3], &set) || set.n == 0) {
		fprintf(stderr, "usage: %s read|toggle|open|group N KIND:COUNT[,KIND:COUNT]...\n", argv[0]);
		return 2;
	}
	op = argv[1];
	group = !strcmp(op, "group");
	if (strcmp(op, "read") && strcmp(op, "toggle") && strcmp(op, "open") && !group) {
		fprintf(stderr, "%s: unknown operation '%s'\n", argv[0], op);
		return 2;
	}
	for (int i = 0; i < (group ? set.n : 1); i++) {
		fd[i] = open_event(&set.ev[i], group && i ? fd[0] : -1, group ? PERF_FORMAT_GROUP : 0);
		if (fd[i] < 0)
			die(set.ev[i].name);
	}

	for (int pass = 0; pass < 2; pass++) {
		long count = pass ? n : warmup;

		if (pass) {
			settle();
			sbi_stats_read(&s0);
			t0 = now_ns();
		}
		if (!strcmp(op, "read") || group) {
			size_t len = group ? sizeof(uint64_t) * (1 + set.n) : sizeof(uint64_t);

			for (long i = 0; i < count; i++)
				if (read(fd[0], buf, len) != (ssize_t)len)
					die("read");
		} else if (!strcmp(op, "toggle")) {
			for (long i = 0; i < count; i++)
				if (ioctl(fd[0], PERF_EVENT_IOC_DISABLE, 0) || ioctl(fd[0], PERF_EVENT_IOC_ENABLE, 0))
					die("ioctl");
		} else {
			for (long i = 0; i < count; i++) {
				int f = open_event(&set.ev[0], -1, 0);

				if (f < 0)
					die(set.ev[0].name);
				close(f);
			}
		}
		if (pass) {
			t1 = now_ns();
			sbi_stats_read(&s1);
		}
	}
	printf("ns_per_op=%.1f ops=%ld events=%d", (double)(t1 - t0) / n, n, group ? set.n : 1);
	print_sbi_delta(&s0, &s1);
	printf("\n");
	return 0;
}
