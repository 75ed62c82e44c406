// SPDX-License-Identifier: GPL-2.0
/*
 * A workaround experiment for the L1 guest of the nested setup (scripts/qemu-run --nested --l1-hook, built as a
 * static riscv64 program): "start" opens a pinned sampling event on cycles, all modes, on CPU 0, with a short
 * period (RPMU_PUMP_PERIOD, default 200000) and no ring buffer, and leaves a process holding it; "stop" ends that
 * process. Its only purpose is to make QEMU's PMU timer expire often: every expiry runs QEMU's overflow check
 * for the instructions counter too, so a stale irq_overflow_left left on that counter by a far counter write
 * (tests/envprobe/far_period.c) is used up at once instead of swallowing the next real overflow. It holds the
 * cycles event in QEMU's one-counter-per-event map, so a guest's cycles counter does not count meanwhile.
 */
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

#define PIDFILE "/tmp/l1-pump.pid"

int main(int argc, char **argv)
{
	struct perf_event_attr a;
	const char *p = getenv("RPMU_PUMP_PERIOD");
	FILE *f;
	int fd, pid;

	if (argc == 2 && !strcmp(argv[1], "start")) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
		a.sample_period = p ? strtoull(p, NULL, 0) : 200000;
		a.pinned = 1;
		fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
		if (fd < 0) {
			perror("l1-pump: perf_event_open");
			return 1;
		}
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			setsid();
			fd = open("/dev/null", O_RDWR);
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			for (;;)
				pause();
		}
		f = fopen(PIDFILE, "w");
		fprintf(f, "%d\n", pid);
		fclose(f);
		printf("l1-pump: cycles sampled every %llu on CPU 0 (process %d)\n",
		       (unsigned long long)a.sample_period, pid);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "stop")) {
		f = fopen(PIDFILE, "r");
		if (!f || fscanf(f, "%d", &pid) != 1)
			return 1;
		kill(pid, SIGTERM);
		printf("l1-pump: stopped\n");
		return 0;
	}
	fprintf(stderr, "usage: %s start|stop\n", argv[0]);
	return 2;
}
