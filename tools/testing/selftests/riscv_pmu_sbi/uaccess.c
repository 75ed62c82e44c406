// SPDX-License-Identifier: GPL-2.0
/*
 * uaccess: what user space may read directly under the current kernel.perf_user_access, so that a check can
 * compare two drivers and hold each to the documented semantics of the sysctl.
 *
 * usage: uaccess EVENT [sample]
 *   EVENT   "instructions" or "cycles" (PERF_TYPE_HARDWARE, exclude_kernel when the PMU filters modes)
 *   sample  the event samples every SAMPLE_PERIOD events (only its mmap page is mapped, so the samples are lost),
 *           and the program runs through several overflows before it reads: the page must follow the counter's
 *           new start values
 *
 * Prints "key value" lines:
 *   rdcycle_unmapped   ok or sigill: reading the cycle CSR before any event is mapped
 *   rdinstret_unmapped ok or sigill: the same for instret
 *   open               ok or the errno of perf_event_open
 *   cap_user_rdpmc     the mmap page's flag while the event runs
 *   index              the mmap page's counter index (0: read(2) only)
 *   pmc_width          the mmap page's counter width (when cap_user_rdpmc)
 *   direct_read        ok, sigill or none (index 0): reading the counter CSR while mapped and running
 *   overflowed         (sample) yes when the count passed three periods before the reads, so the counter was
 *                      reloaded by overflow interrupts
 *   rdpmc_agrees       yes when the count computed from the mmap page lies between two read(2) counts around it
 *   after_munmap       ok, sigill or none: reading the same counter CSR once the page is unmapped
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counter_csr.h"

/* Sampling period with "sample": about 100 overflows in the spin before the reads. */
#define SAMPLE_PERIOD 100000

static uint64_t read_count(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

int main(int argc, char **argv)
{
	struct perf_event_attr attr;
	struct perf_event_mmap_page *pc;
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned long sink = 0;
	unsigned int idx;
	uint64_t before, after, self = 0;
	int fd, rdpmc, tries, sample;

	sample = argc == 3 && !strcmp(argv[2], "sample");
	if ((argc != 2 && !sample) || (strcmp(argv[1], "instructions") && strcmp(argv[1], "cycles"))) {
		fprintf(stderr, "usage: %s instructions|cycles [sample]\n", argv[0]);
		return 2;
	}
	signal(SIGILL, on_sigill);
	printf("rdcycle_unmapped %s\n", try_read(0));
	printf("rdinstret_unmapped %s\n", try_read(2));

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = strcmp(argv[1], "cycles") ? PERF_COUNT_HW_INSTRUCTIONS : PERF_COUNT_HW_CPU_CYCLES;
	attr.exclude_kernel = 1;
	if (sample) {
		attr.sample_period = SAMPLE_PERIOD;
		attr.sample_type = PERF_SAMPLE_IP;
	}
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	/* Without Sscofpmf the PMU cannot filter modes, and perf core refuses exclude_kernel with EINVAL. */
	if (fd < 0 && (errno == EINVAL || errno == EOPNOTSUPP)) {
		attr.exclude_kernel = 0;
		fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	}
	if (fd < 0) {
		printf("open %s\n", strerror(errno));
		return 0;
	}
	printf("open ok\n");
	pc = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (pc == MAP_FAILED) {
		printf("mmap %s\n", strerror(errno));
		return 0;
	}
	/* The page is filled in while the event runs on this CPU; a few reads let a migration settle. */
	for (tries = 0; tries < 3; tries++) {
		uint32_t seq;

		do {
			seq = pc->lock;
			__sync_synchronize();
			rdpmc = pc->cap_user_rdpmc;
			idx = pc->index;
			__sync_synchronize();
		} while (pc->lock != seq);
		if (idx)
			break;
		for (int i = 0; i < 10000; i++)
			sink += i;
	}
	if (sample) {
		/* Overflow interrupts reload the counter with the next period: about 100 of them. */
		for (int i = 0; i < 2000000; i++)
			sink += i;
		printf("overflowed %s\n", read_count(fd) > 3 * SAMPLE_PERIOD ? "yes" : "no");
	}
	printf("cap_user_rdpmc %d\n", rdpmc);
	printf("index %u\n", idx);
	if (rdpmc)
		printf("pmc_width %u\n", pc->pmc_width);
	if (!rdpmc || !idx || idx > 32) {
		printf("direct_read none\nrdpmc_agrees none\n");
	} else {
		const char *r = try_read(idx - 1);

		printf("direct_read %s\n", r);
		if (!strcmp(r, "ok")) {
			/* The count computed from the page lies between two read(2)s around it (same CPU or not). */
			for (tries = 0; tries < 5; tries++) {
				uint32_t seq;
				uint64_t pmc = 0, width;

				before = read_count(fd);
				do {
					seq = pc->lock;
					__sync_synchronize();
					idx = pc->index;
					width = pc->pmc_width;
					self = pc->offset;
					if (idx)
						pmc = csr_read_idx(idx - 1);
					__sync_synchronize();
				} while (pc->lock != seq);
				after = read_count(fd);
				if (!idx)
					continue;
				if (width < 64) {
					pmc <<= 64 - width;
					pmc >>= 64 - width;
				}
				self += pmc;
				break;
			}
			printf("rdpmc_agrees %s\n", tries < 5 && before <= self && self <= after ? "yes" : "no");
		} else {
			printf("rdpmc_agrees none\n");
		}
	}
	munmap(pc, page);
	printf("after_munmap %s\n", idx && idx <= 32 ? try_read(idx - 1) : "none");
	close(fd);
	return 0;
}
