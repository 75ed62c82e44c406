// SPDX-License-Identifier: GPL-2.0
/*
 * stat_group: counts cycles and instructions of a command as one group with perf_event_open(2), reads both
 * counts with one read(2) of the group leader, and scales them by the time the group was enabled over the time
 * it ran on the counters (perf core multiplexes groups when events outnumber counters).
 *
 * usage: stat_group COMMAND [ARGS...]
 * prints: "cycles N", "instructions N", "enabled NS", "running NS" and "scaled yes|no"
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int open_counter(uint64_t config, int group_fd, pid_t pid)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = config;
	/* The leader starts disabled and enabled on exec; the others follow their leader. */
	attr.disabled = group_fd == -1;
	attr.enable_on_exec = group_fd == -1;
	attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return syscall(SYS_perf_event_open, &attr, pid, -1, group_fd, 0);
}

int main(int argc, char **argv)
{
	struct { uint64_t nr, enabled, running, values[2]; } rd;
	int go[2], leader, member, status;
	char c = 0;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	/* The child waits until its counters exist, then runs the command. */
	if (pipe(go)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(go[0]);
	leader = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1, pid);
	member = leader < 0 ? -1 : open_counter(PERF_COUNT_HW_INSTRUCTIONS, leader, pid);
	if (leader < 0 || member < 0) {
		perror("perf_event_open");
		kill(pid, 9);
		return 1;
	}
	if (write(go[1], &c, 1) != 1) {
		perror("write");
		return 1;
	}
	waitpid(pid, &status, 0);
	if (read(leader, &rd, sizeof(rd)) != sizeof(rd) || rd.nr != 2) {
		perror("read");
		return 1;
	}
	/* A group is scheduled as a whole, so one scaling factor applies to both counts. */
	for (int i = 0; i < 2; i++) {
		uint64_t v = rd.values[i];

		if (rd.running && rd.running < rd.enabled)
			v = (uint64_t)((double)v * rd.enabled / rd.running);
		printf("%s %llu\n", i ? "instructions" : "cycles", (unsigned long long)v);
	}
	printf("enabled %llu\nrunning %llu\nscaled %s\n", (unsigned long long)rd.enabled,
	       (unsigned long long)rd.running, rd.running < rd.enabled ? "yes" : "no");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
