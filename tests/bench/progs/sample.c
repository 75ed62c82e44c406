// SPDX-License-Identifier: GPL-2.0
/*
 * bench-sample: the cost of a counter overflow interrupt. A fixed user-mode loop runs while its cycles:u event
 * samples with a fixed period P, as `perf record -c P -e cycles:u` has the kernel do; two runs with two
 * periods give the cost of one interrupt as the difference in run time over the difference in samples.
 *
 * The event is opened and its ring buffer mapped here, so that only the loop is sampled: the samples are
 * counted in the ring buffer after the loop, and there is no perf tool to wake (the buffer is large enough for
 * every sample, so the kernel never has to drop one).
 *
 * usage: bench-sample PERIOD ITERATIONS
 *
 * Prints: ns (guest ns of the loop), iterations, samples (PERF_RECORD_SAMPLE records), lost (samples the
 * kernel could not write), throttled (PERF_RECORD_THROTTLE records), and the Rust driver's SBI calls during
 * the loop as sbi.NAME=COUNT.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "bench.h"

/* Ring buffer data pages: 1 MiB, room for 32,768 samples of 32 bytes. */
#define DATA_PAGES 256

int main(int argc, char **argv)
{
	struct perf_event_mmap_page *meta;
	struct perf_event_attr attr;
	struct sbi_stats s0, s1;
	unsigned long n, acc = 0;
	uint64_t period, t0, t1, head, samples = 0, lost = 0, throttled = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *data;
	int fd;

	if (argc != 3 || (period = strtoull(argv[1], NULL, 0)) == 0 || (n = strtoul(argv[2], NULL, 0)) == 0) {
		fprintf(stderr, "usage: %s PERIOD ITERATIONS\n", argv[0]);
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_CPU_CYCLES;
	attr.sample_period = period;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		die("perf_event_open cycles:u");
	meta = mmap(NULL, page * (1 + DATA_PAGES), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED)
		die("mmap");
	data = (unsigned char *)meta + page;

	settle();
	sbi_stats_read(&s0);
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		die("PERF_EVENT_IOC_ENABLE");
	t0 = now_ns();
	for (unsigned long i = 0; i < n; i++)
		__asm__ volatile("add %0, %0, %1" : "+r"(acc) : "r"(i));
	t1 = now_ns();
	if (ioctl(fd, PERF_EVENT_IOC_DISABLE, 0))
		die("PERF_EVENT_IOC_DISABLE");
	sbi_stats_read(&s1);

	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	if (head > (uint64_t)page * DATA_PAGES) {
		fprintf(stderr, "the ring buffer wrapped: %llu bytes\n", (unsigned long long)head);
		return 1;
	}
	for (uint64_t off = 0; off < head;) {
		struct perf_event_header *h = (struct perf_event_header *)(data + off);

		if (h->size == 0)
			break;
		if (h->type == PERF_RECORD_SAMPLE)
			samples++;
		else if (h->type == PERF_RECORD_LOST)
			lost += ((uint64_t *)(h + 1))[1];
		else if (h->type == PERF_RECORD_THROTTLE)
			throttled++;
		off += h->size;
	}
	printf("ns=%llu iterations=%lu samples=%llu lost=%llu throttled=%llu", (unsigned long long)(t1 - t0), n,
	       (unsigned long long)samples, (unsigned long long)lost, (unsigned long long)throttled);
	print_sbi_delta(&s0, &s1);
	printf("\n");
	return acc == 1;
}
