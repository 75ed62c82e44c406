// SPDX-License-Identifier: GPL-2.0
/*
 * evopen: opens one perf event with perf_event_open(2) and says what became of it, so that a check can compare
 * what two drivers answer to the same request, including requests perf's own tool never makes.
 *
 * usage: evopen TYPE CONFIG [FLAGS]
 *   TYPE, CONFIG  attr.type and attr.config (decimal or 0x hex)
 *   FLAGS         letters: u exclude_user, k exclude_kernel, h exclude_hv, H exclude_host, G exclude_guest,
 *                 s sampling (sample_period 100000), b branch stack, g config1 bit 0 (guest events)
 *
 * Prints one line: "errno NAME" when the open fails, "counted" when the event ran on a counter while a loop
 * ran, or "not-counted" when it was opened but never got a counter.
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

static const char *errno_name(int err)
{
	switch (err) {
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENODEV: return "ENODEV";
	case EBUSY: return "EBUSY";
	case E2BIG: return "E2BIG";
	default: return "other";
	}
}

int main(int argc, char **argv)
{
	struct perf_event_attr attr;
	struct { uint64_t value, enabled, running; } rd;
	volatile unsigned long sink = 0;
	const char *flags = argc > 3 ? argv[3] : "";
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: %s TYPE CONFIG [FLAGS]\n", argv[0]);
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = strtoul(argv[1], NULL, 0);
	attr.config = strtoull(argv[2], NULL, 0);
	attr.disabled = 1;
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr.exclude_user = !!strchr(flags, 'u');
	attr.exclude_kernel = !!strchr(flags, 'k');
	attr.exclude_hv = !!strchr(flags, 'h');
	attr.exclude_host = !!strchr(flags, 'H');
	attr.exclude_guest = !!strchr(flags, 'G');
	if (strchr(flags, 'g'))
		attr.config1 = 1;
	if (strchr(flags, 's'))
		attr.sample_period = 100000;
	if (strchr(flags, 'b')) {
		attr.sample_type = PERF_SAMPLE_BRANCH_STACK;
		attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
		if (!attr.sample_period)
			attr.sample_period = 100000;
	}

	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		printf("errno %s\n", errno_name(errno));
		return 0;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &rd, sizeof(rd)) != sizeof(rd)) {
		printf("read-failed %s\n", errno_name(errno));
		return 0;
	}
	printf("%s\n", rd.running ? "counted" : "not-counted");
	close(fd);
	return 0;
}
