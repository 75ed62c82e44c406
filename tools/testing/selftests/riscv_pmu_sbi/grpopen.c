// SPDX-License-Identifier: GPL-2.0
/*
 * grpopen: opens a group of N copies of one perf event on this task and says what became of it, so that a
 * check can tell a group the PMU refuses at perf_event_open(2) from one it accepts and never schedules.
 *
 * usage: grpopen N TYPE CONFIG [CONFIG...]
 *
 * With several CONFIGs, member K is the event CONFIG number K modulo their count (all of the same TYPE).
 *
 * Prints one line: "errno NAME member K" when opening member K (0 is the leader) fails, else "counted" when
 * the group ran on counters while a loop ran, or "not-counted" when it was opened but never got counters.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct perf_event_attr attr;
	uint64_t rd[3 + 64];
	volatile unsigned long sink = 0;
	int n, leader = -1;

	if (argc < 4 || (n = atoi(argv[1])) < 1 || n > 64) {
		fprintf(stderr, "usage: %s N(1-64) TYPE CONFIG [CONFIG...]\n", argv[0]);
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = strtoul(argv[2], NULL, 0);
	attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	for (int i = 0; i < n; i++) {
		int fd;

		attr.disabled = i == 0;
		attr.config = strtoull(argv[3 + i % (argc - 3)], NULL, 0);
		fd = syscall(SYS_perf_event_open, &attr, 0, -1, leader, 0);
		if (fd < 0) {
			printf("errno %s member %d\n", errno == EINVAL ? "EINVAL" : strerror(errno), i);
			return 0;
		}
		if (i == 0)
			leader = fd;
	}
	ioctl(leader, PERF_EVENT_IOC_ENABLE, 0);
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
	ioctl(leader, PERF_EVENT_IOC_DISABLE, 0);
	if (read(leader, rd, sizeof(rd)) < (ssize_t)(3 * sizeof(uint64_t))) {
		printf("read-failed %s\n", strerror(errno));
		return 0;
	}
	/* rd: nr, time_enabled, time_running, values... */
	printf("%s\n", rd[2] ? "counted" : "not-counted");
	return 0;
}
