// SPDX-License-Identifier: GPL-2.0
/*
 * self_monitor: counts its own instructions around a loop by reading the hardware counter directly, through
 * the perf mmap page (the rdpmc-style access of perf_event_mmap_page), without a system call per read.
 *
 * With kernel.perf_user_access = 1 (the default) the driver lets user space read the counter of an event it
 * has mmap'd: the page's cap_user_rdpmc is set, `index` is the counter's CSR offset from `cycle` plus one and
 * `pmc_width` its width. When the page does not offer the counter (cap_user_rdpmc 0, or index 0 because the
 * event is not on a counter right now), the program reads the count with read(2) instead and says so.
 *
 * usage: self_monitor [ITERATIONS]
 * prints: "path rdpmc|read", "instructions N"
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define barrier() __asm__ __volatile__("" ::: "memory")

/* The CSR number is part of the instruction, so each user counter CSR needs its own csrr. */
#define CSRR_CASE(n) case n: __asm__ __volatile__("csrr %0, " #n : "=r"(v)); break
static uint64_t read_counter_csr(unsigned int csr)
{
	uint64_t v = 0;

	switch (csr) {
	CSRR_CASE(0xc00); CSRR_CASE(0xc01); CSRR_CASE(0xc02); CSRR_CASE(0xc03);
	CSRR_CASE(0xc04); CSRR_CASE(0xc05); CSRR_CASE(0xc06); CSRR_CASE(0xc07);
	CSRR_CASE(0xc08); CSRR_CASE(0xc09); CSRR_CASE(0xc0a); CSRR_CASE(0xc0b);
	CSRR_CASE(0xc0c); CSRR_CASE(0xc0d); CSRR_CASE(0xc0e); CSRR_CASE(0xc0f);
	CSRR_CASE(0xc10); CSRR_CASE(0xc11); CSRR_CASE(0xc12); CSRR_CASE(0xc13);
	CSRR_CASE(0xc14); CSRR_CASE(0xc15); CSRR_CASE(0xc16); CSRR_CASE(0xc17);
	CSRR_CASE(0xc18); CSRR_CASE(0xc19); CSRR_CASE(0xc1a); CSRR_CASE(0xc1b);
	CSRR_CASE(0xc1c); CSRR_CASE(0xc1d); CSRR_CASE(0xc1e); CSRR_CASE(0xc1f);
	}
	return v;
}

/*
 * The count as the mmap page describes it: `offset` plus the counter's current value, sign-extended from its
 * width, read under the page's sequence lock. Returns -1 when the page does not offer the counter.
 */
static int64_t mmap_read(volatile struct perf_event_mmap_page *pc)
{
	uint32_t seq, idx, width;
	int64_t count, pmc;

	do {
		seq = pc->lock;
		barrier();
		idx = pc->index;
		count = pc->offset;
		if (!pc->cap_user_rdpmc || !idx)
			return -1;
		width = pc->pmc_width;
		pmc = read_counter_csr(0xc00 + idx - 1);
		pmc <<= 64 - width;
		pmc >>= 64 - width;
		count += pmc;
		barrier();
	} while (pc->lock != seq);
	return count;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 1000000;
	struct perf_event_attr attr;
	volatile unsigned long sink = 0;
	struct perf_event_mmap_page *pc;
	int64_t before, after;
	uint64_t count;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_INSTRUCTIONS;
	attr.exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		/* Without Sscofpmf the PMU cannot filter modes: count every mode. */
		attr.exclude_kernel = 0;
		fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	}
	if (fd < 0) {
		perror("perf_event_open");
		return 1;
	}
	pc = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (pc == MAP_FAILED) {
		perror("mmap");
		return 1;
	}

	before = mmap_read(pc);
	for (long i = 0; i < iterations; i++)
		sink += i;
	after = mmap_read(pc);
	if (before >= 0 && after >= 0) {
		printf("path rdpmc\ninstructions %lld\n", (long long)(after - before));
		return 0;
	}
	/* The page does not offer the counter: read the count with a system call. */
	if (read(fd, &count, sizeof(count)) != sizeof(count)) {
		perror("read");
		return 1;
	}
	printf("path read\ninstructions %llu\n", (unsigned long long)count);
	return 0;
}
