// SPDX-License-Identifier: GPL-2.0
/*
 * grpsample: samples a group through its leader with PERF_SAMPLE_READ and PERF_FORMAT_GROUP, so that every sample
 * carries the read values of the whole group. perf core fills them in from inside the PMU driver's overflow
 * interrupt, calling the driver's read callback for the sibling, which is the path this program exercises.
 *
 * usage: grpsample [ITERATIONS [PERIOD]]
 *
 * The leader counts user-mode instructions and samples every PERIOD of them; the sibling counts user-mode cycles.
 * A fixed loop runs in chunks, and the ring buffer is drained after each chunk, so that records wrap around its
 * end. Every sample must carry two values with the leader's and the sibling's ids, both non-zero and neither
 * smaller than in the sample before. After the loop a read(2) of the group must give values no smaller than the
 * last sample's. On success the program prints one line "samples N wraps W leader L sibling S" (W: how often the
 * ring buffer wrapped; L and S: the final values); on any inconsistency, or when no sample arrived, it prints the
 * reason on stderr and exits 1.
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

#define DATA_PAGES 1	/* a small ring buffer, so that it wraps */
#define CHUNK 100000	/* loop iterations between two drains of the ring buffer */

/* The group read layout of this read_format: nr, time_enabled, time_running, then a value and an id per member. */
struct group_read {
	uint64_t nr, time_enabled, time_running;
	struct { uint64_t value, id; } v[2];
};

static uint64_t ids[2];
static struct group_read last;	/* the values of the last sample */
static unsigned long nsamples;

static void fail(const char *msg)
{
	fprintf(stderr, "grpsample: %s (after %lu samples)\n", msg, nsamples);
	exit(1);
}

/* Checks one group read (from a sample, or from read(2) when final is set) against the previous sample's. */
static void check_read(const struct group_read *r, int final)
{
	const char *what = final ? "read(2) of the group" : "sample";
	char msg[200];

	if (r->nr != 2 || r->v[0].id != ids[0] || r->v[1].id != ids[1]) {
		snprintf(msg, sizeof(msg), "%s: nr %llu, ids %llu %llu, expected 2 values with ids %llu %llu", what,
			 (unsigned long long)r->nr, (unsigned long long)r->v[0].id, (unsigned long long)r->v[1].id,
			 (unsigned long long)ids[0], (unsigned long long)ids[1]);
		fail(msg);
	}
	if (r->v[0].value == 0 || r->v[1].value == 0 || r->v[0].value < last.v[0].value ||
	    r->v[1].value < last.v[1].value || r->time_enabled < last.time_enabled ||
	    r->time_running < last.time_running) {
		snprintf(msg, sizeof(msg), "%s: leader %llu, sibling %llu, times %llu/%llu after leader %llu, "
			 "sibling %llu, times %llu/%llu: zero or decreasing", what,
			 (unsigned long long)r->v[0].value, (unsigned long long)r->v[1].value,
			 (unsigned long long)r->time_enabled, (unsigned long long)r->time_running,
			 (unsigned long long)last.v[0].value, (unsigned long long)last.v[1].value,
			 (unsigned long long)last.time_enabled, (unsigned long long)last.time_running);
		fail(msg);
	}
}

/* Copies len bytes at ring offset off out of the data area of size bytes, wrapping around its end. */
static void copy_out(const char *data, uint64_t size, uint64_t off, void *dst, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((char *)dst)[i] = data[(off + i) & (size - 1)];
}

/* Parses every record between data_tail and data_head, then gives the space back to the kernel. */
static void drain(struct perf_event_mmap_page *pg, const char *data, uint64_t size)
{
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		struct { struct perf_event_header h; uint64_t ip; struct group_read r; } s;

		copy_out(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			fail("malformed record in the ring buffer");
		if (h.type == PERF_RECORD_LOST)
			fail("the ring buffer overflowed: samples were lost");
		if (h.type == PERF_RECORD_SAMPLE) {
			if (h.size != sizeof(s))
				fail("a sample record has an unexpected size");
			copy_out(data, size, tail, &s, sizeof(s));
			check_read(&s.r, 0);
			last = s.r;
			nsamples++;
		}
		/* Other records (throttle, unthrottle) carry nothing to check. */
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static int open_event(uint64_t config, uint64_t period, int group)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = config;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = group < 0;
	attr.sample_period = period;
	attr.sample_type = period ? PERF_SAMPLE_IP | PERF_SAMPLE_READ : 0;
	attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
			   PERF_FORMAT_TOTAL_TIME_RUNNING;
	return syscall(SYS_perf_event_open, &attr, 0, -1, group, 0);
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000000;
	uint64_t period = argc > 2 ? strtoull(argv[2], NULL, 0) : 500009;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t size = DATA_PAGES * page;
	unsigned long acc = 0;
	struct group_read final;
	struct perf_event_mmap_page *pg;
	int leader, sibling;

	leader = open_event(PERF_COUNT_HW_INSTRUCTIONS, period, -1);
	if (leader < 0) {
		perror("grpsample: perf_event_open of the leader (instructions, sampling)");
		return 1;
	}
	sibling = open_event(PERF_COUNT_HW_CPU_CYCLES, 0, leader);
	if (sibling < 0) {
		perror("grpsample: perf_event_open of the sibling (cycles)");
		return 1;
	}
	if (ioctl(leader, PERF_EVENT_IOC_ID, &ids[0]) || ioctl(sibling, PERF_EVENT_IOC_ID, &ids[1])) {
		perror("grpsample: PERF_EVENT_IOC_ID");
		return 1;
	}
	pg = mmap(NULL, (DATA_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, leader, 0);
	if (pg == MAP_FAILED) {
		perror("grpsample: mmap of the ring buffer");
		return 1;
	}

	/* The loop body is the one of the workload program: one add the compiler cannot remove. */
	ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	for (unsigned long i = 0; i < iterations; i++) {
		__asm__ volatile("add %0, %0, %1" : "+r"(acc) : "r"(i));
		if (i % CHUNK == CHUNK - 1)
			drain(pg, (char *)pg + page, size);
	}
	ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
	drain(pg, (char *)pg + page, size);
	if (nsamples == 0)
		fail("no sample arrived");

	if (read(leader, &final, sizeof(final)) != sizeof(final)) {
		perror("grpsample: read of the group");
		return 1;
	}
	check_read(&final, 1);
	printf("samples %lu wraps %llu leader %llu sibling %llu\n", nsamples,
	       (unsigned long long)(pg->data_tail / size), (unsigned long long)final.v[0].value,
	       (unsigned long long)final.v[1].value);
	return 0;
}
