// SPDX-License-Identifier: GPL-2.0
/*
 * perm: what an unprivileged task may open and read of the `cpu` PMU, for the permission and isolation check
 * (permissions.sh runs it as user nobody under each perf_event_paranoid and
 * kernel.perf_user_access setting).
 *
 * usage: perm open            perf_event_open outcomes under the current perf_event_paranoid
 *        perm probe CPU       which counter CSRs this task may read on CPU, holding no event
 *        perm share CPU EVENT one task holds an mmap'd EVENT (instructions or dtlb) on CPU; another task on the same
 *                             CPU probes the counters while the first one sleeps
 *        perm elsewhere CPU OTHER EVENT  a task that has run on OTHER holds an mmap'd EVENT on CPU, where it runs;
 *                             another task on OTHER probes the counters meanwhile
 *
 * Prints "key value" lines. A counter list is the CSR numbers minus 0xc00 (0 cycle, 2 instret, 3..31
 * hpmcounter3..31) that read without a trap, comma-separated, or "none". Counter 1 (time) is never probed: it is
 * not a PMU counter and stays readable for the vDSO whatever the PMU driver does.
 *
 *   open:  kernel       errno name or ok: instructions counting user and kernel mode, this task
 *          user         the same with exclude_kernel and exclude_hv (":u")
 *          user_counts  yes when the ":u" event counted a loop, no otherwise, none when it did not open
 *          cpu_wide     the ":u" event on CPU 0 for every task (pid -1); user and kernel mode where the PMU
 *                       cannot filter modes
 *   probe: readable     the counter list
 *   share: open         ok or errno name (":u" first; without mode filtering, user and kernel mode)
 *          index        the mmap page's counter index while the event runs (0: none offered)
 *          own_readable the counter list of the owner, while its event runs
 *          own_counter  ok, sigill or none: the owner reads its event's counter
 *          other_readable the counter list of the second task while the owner sleeps
 *          other_owner_counter ok, sigill or none: the second task reads the owner's counter
 *          own_after    ok, sigill or none: the owner reads its counter again once it runs again
 *   elsewhere: open, index as for share
 *          elsewhere_readable the counter list of a task on OTHER while the owner's event runs on CPU (its
 *                       address space has run on OTHER, so OTHER is in its mm_cpumask())
 *          elsewhere_owner_counter ok, sigill or none: that task reads the owner's counter index
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counter_csr.h"

/* The counter list: every counter CSR but time (1) that reads without a trap. */
static void readable(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < 32; i++) {
		if (i == 1 || strcmp(try_read(i), "ok"))
			continue;
		n += snprintf(buf + n, len - n, "%s%u", n ? "," : "", i);
	}
	if (!n)
		snprintf(buf, len, "none");
}

static const char *err_name(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODEV: return "ENODEV";
	case EBUSY: return "EBUSY";
	default: return "other";
	}
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int open_event(uint64_t type, uint64_t config, int exclude_kernel, pid_t pid, int cpu)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	attr.exclude_kernel = exclude_kernel;
	attr.exclude_hv = exclude_kernel;
	return syscall(SYS_perf_event_open, &attr, pid, cpu, -1, 0);
}

static void spin(void)
{
	volatile unsigned long sink = 0;

	for (int i = 0; i < 100000; i++)
		sink += i;
}

static int cmd_open(void)
{
	uint64_t v = 0;
	int fd, filter;

	fd = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, 0, -1);
	printf("kernel %s\n", fd >= 0 ? "ok" : err_name(errno));
	if (fd >= 0)
		close(fd);
	fd = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, 0, -1);
	printf("user %s\n", fd >= 0 ? "ok" : err_name(errno));
	/* Without Sscofpmf the PMU cannot filter modes (EINVAL): the CPU-wide event then counts both. */
	filter = fd >= 0 || errno != EINVAL;
	if (fd >= 0) {
		spin();
		if (read(fd, &v, sizeof(v)) != sizeof(v))
			v = 0;
		printf("user_counts %s\n", v > 100000 ? "yes" : "no");
		close(fd);
	} else {
		printf("user_counts none\n");
	}
	fd = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, filter, -1, 0);
	printf("cpu_wide %s\n", fd >= 0 ? "ok" : err_name(errno));
	if (fd >= 0)
		close(fd);
	return 0;
}

static int cmd_probe(int cpu)
{
	char buf[160];

	if (pin(cpu)) {
		perror("sched_setaffinity");
		return 1;
	}
	readable(buf, sizeof(buf));
	printf("readable %s\n", buf);
	return 0;
}

/*
 * Opens EVENT (instructions or dtlb) for this task, ":u" where the PMU filters modes, maps its page and returns
 * the counter index the page offers while the event runs (0: none, -1: unknown EVENT); prints "open" and
 * "index". The caller unmaps *pc (MAP_FAILED when there is none) and closes *fd (negative when there is none).
 */
static int open_mapped(const char *event, int *fd, struct perf_event_mmap_page **pc)
{
	uint64_t type = PERF_TYPE_HARDWARE, config = PERF_COUNT_HW_INSTRUCTIONS;
	long page = sysconf(_SC_PAGESIZE);
	unsigned int idx = 0;

	if (!strcmp(event, "dtlb")) {
		type = PERF_TYPE_HW_CACHE;
		config = PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
			 (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
	} else if (strcmp(event, "instructions")) {
		fprintf(stderr, "perm: EVENT is instructions or dtlb\n");
		return -1;
	}
	*fd = open_event(type, config, 1, 0, -1);
	/* Without Sscofpmf the PMU cannot filter modes, and perf core refuses exclude_kernel with EINVAL. */
	if (*fd < 0 && errno == EINVAL)
		*fd = open_event(type, config, 0, 0, -1);
	printf("open %s\n", *fd >= 0 ? "ok" : err_name(errno));
	*pc = *fd >= 0 ? mmap(NULL, page, PROT_READ, MAP_SHARED, *fd, 0) : MAP_FAILED;
	if (*pc != MAP_FAILED) {
		/* The page is filled in while the event runs on this CPU. */
		for (int tries = 0; tries < 3 && !idx; tries++) {
			uint32_t seq;

			do {
				seq = (*pc)->lock;
				__sync_synchronize();
				idx = (*pc)->cap_user_rdpmc ? (*pc)->index : 0;
				__sync_synchronize();
			} while ((*pc)->lock != seq);
			if (!idx)
				spin();
		}
	}
	if (idx > 32)
		idx = 0;
	printf("index %u\n", idx);
	return idx;
}

/* Unmaps and closes what open_mapped() left. */
static void close_mapped(int fd, struct perf_event_mmap_page *pc)
{
	if (pc != MAP_FAILED)
		munmap(pc, sysconf(_SC_PAGESIZE));
	if (fd >= 0)
		close(fd);
}

/*
 * Forks the second task, on this task's CPU, which waits for the owner's counter index on go[0], prints
 * "NAME_readable" and "NAME_owner_counter" and answers on back[1]. Returns its pid, or -1.
 */
static pid_t fork_prober(const char *name, int go[2], int back[2])
{
	char buf[160], c;
	pid_t child;

	fflush(stdout);
	child = fork();
	if (child < 0)
		perror("fork");
	if (child != 0)
		return child;
	if (read(go[0], &c, 1) != 1)
		_exit(1);
	readable(buf, sizeof(buf));
	printf("%s_readable %s\n", name, buf);
	printf("%s_owner_counter %s\n", name, c ? try_read((unsigned char)c - 1) : "none");
	fflush(stdout);
	if (write(back[1], "x", 1) != 1)
		_exit(1);
	_exit(0);
}

static int cmd_share(int cpu, const char *event)
{
	struct perf_event_mmap_page *pc;
	int go[2], back[2];
	char buf[160], c;
	pid_t child;
	int fd, status, idx;

	if (strcmp(event, "instructions") && strcmp(event, "dtlb")) {
		fprintf(stderr, "perm share: EVENT is instructions or dtlb\n");
		return 2;
	}
	if (pin(cpu) || pipe(go) || pipe(back)) {
		perror("perm share");
		return 1;
	}
	/* The second task: on the same CPU, it probes while the owner waits for its answer. */
	child = fork_prober("other", go, back);
	if (child < 0)
		return 1;
	idx = open_mapped(event, &fd, &pc);
	readable(buf, sizeof(buf));
	printf("own_readable %s\n", buf);
	printf("own_counter %s\n", idx ? try_read(idx - 1) : "none");
	fflush(stdout);
	/* Hand the CPU to the second task and sleep until it has probed. */
	c = (char)idx;
	if (write(go[1], &c, 1) != 1 || read(back[0], &c, 1) != 1) {
		perror("perm share: pipe");
		return 1;
	}
	waitpid(child, &status, 0);
	printf("own_after %s\n", idx ? try_read(idx - 1) : "none");
	close_mapped(fd, pc);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int cmd_elsewhere(int cpu, int other, const char *event)
{
	struct perf_event_mmap_page *pc;
	int go[2], back[2];
	char c;
	pid_t child;
	int fd, status, idx;

	if (strcmp(event, "instructions") && strcmp(event, "dtlb")) {
		fprintf(stderr, "perm elsewhere: EVENT is instructions or dtlb\n");
		return 2;
	}
	/* The owner's address space runs on OTHER first, then the owner moves to CPU for good. */
	if (pin(other) || pipe(go) || pipe(back)) {
		perror("perm elsewhere");
		return 1;
	}
	spin();
	/* Another task, on OTHER, probes while the owner's event runs on CPU. */
	child = fork_prober("elsewhere", go, back);
	if (child < 0)
		return 1;
	if (pin(cpu)) {
		perror("perm elsewhere");
		return 1;
	}
	idx = open_mapped(event, &fd, &pc);
	fflush(stdout);
	/* The owner keeps running on CPU, its event on, while the other task probes on OTHER. */
	c = (char)idx;
	if (write(go[1], &c, 1) != 1) {
		perror("perm elsewhere: pipe");
		return 1;
	}
	for (;;) {
		struct timespec ts = { 0, 0 };
		fd_set fds;

		FD_ZERO(&fds);
		FD_SET(back[0], &fds);
		if (pselect(back[0] + 1, &fds, NULL, NULL, &ts, NULL) > 0)
			break;
		spin();
	}
	waitpid(child, &status, 0);
	close_mapped(fd, pc);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGILL, on_sigill);
	if (argc == 2 && !strcmp(argv[1], "open"))
		return cmd_open();
	if (argc == 3 && !strcmp(argv[1], "probe"))
		return cmd_probe(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "share"))
		return cmd_share(atoi(argv[2]), argv[3]);
	if (argc == 5 && !strcmp(argv[1], "elsewhere"))
		return cmd_elsewhere(atoi(argv[2]), atoi(argv[3]), argv[4]);
	fprintf(stderr, "usage: perm open | perm probe CPU | perm share CPU instructions|dtlb | "
		"perm elsewhere CPU OTHER instructions|dtlb\n");
	return 2;
}
