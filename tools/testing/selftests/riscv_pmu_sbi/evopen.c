// SPDX-License-Identifier: GPL-2.0
/*
 * evopen: opens one perf event with perf_event_open(2) and says what became of it, so that a check can compare
 * what two drivers answer to the same request, including requests perf's own tool never makes.
 *
 * usage: evopen TYPE CONFIG [FLAGS]
 *        evopen -      (cases from standard input, one per line: CASE TYPE CONFIG [FLAGS])
 *   TYPE, CONFIG  attr.type and attr.config (decimal or 0x hex)
 *   FLAGS         letters: u exclude_user, k exclude_kernel, h exclude_hv, H exclude_host, G exclude_guest,
 *                 s sampling (sample_period 100000), b branch stack, g config1 bit 0 (guest events)
 *
 * Prints one line per event: "errno NAME" when the open fails, "counted" when the event ran on a counter while
 * a loop ran, or "not-counted" when it was opened but never got a counter; with "-", each line starts with its
 * CASE. Every event is closed before the next is opened, so the cases of one run do not see each other.
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

/* Opens one event, runs a loop while it is enabled and prints what became of it. */
static void open_one(const char *type, const char *config, const char *flags)
{
	struct perf_event_attr attr;
	struct { uint64_t value, enabled, running; } rd;
	volatile unsigned long sink = 0;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = strtoul(type, NULL, 0);
	attr.config = strtoull(config, NULL, 0);
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
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (unsigned long i = 0; i < 100000; i++)
		sink += i;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &rd, sizeof(rd)) != sizeof(rd))
		printf("read-failed %s\n", errno_name(errno));
	else
		printf("%s\n", rd.running ? "counted" : "not-counted");
	close(fd);
}

int main(int argc, char **argv)
{
	char line[256], name[64], type[32], config[32], flags[16];
	int n;

	if (argc == 2 && strcmp(argv[1], "-") == 0) {
		while (fgets(line, sizeof(line), stdin)) {
			flags[0] = '\0';
			n = sscanf(line, "%63s %31s %31s %15s", name, type, config, flags);
			if (n <= 0)
				continue;
			if (n < 3) {
				fprintf(stderr, "evopen: malformed case line: %s", line);
				return 2;
			}
			printf("%s ", name);
			open_one(type, config, flags);
			fflush(stdout);
		}
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: %s TYPE CONFIG [FLAGS] | %s -\n", argv[0], argv[0]);
		return 2;
	}
	open_one(argv[1], argv[2], argc > 3 ? argv[3] : "");
	return 0;
}
