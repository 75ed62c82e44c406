// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong: two processes pass a byte back and forth through two pipes, so that each round trip puts both to
 * sleep and wakes them again: a context switch benchmark for per-task counting.
 *
 * usage: pingpong ROUNDS
 *
 * The parent ("ping") is the one to monitor, e.g. with `perf stat --no-inherit`; the child ("pong") is forked
 * after perf attached, and --no-inherit leaves it unmonitored. At the end the parent prints how often it was
 * switched out, from /proc/self/status:
 *   switches VOLUNTARY NONVOLUNTARY
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void ctxt_switches(long *vol, long *nonvol)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	*vol = *nonvol = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			*vol = atol(line + 24);
		else if (!strncmp(line, "nonvoluntary_ctxt_switches:", 27))
			*nonvol = atol(line + 27);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	int to_child[2], to_parent[2];
	long rounds, v0, n0, v1, n1;
	char c = 0;
	pid_t pid;

	if (argc != 2 || (rounds = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: %s ROUNDS\n", argv[0]);
		return 2;
	}
	if (pipe(to_child) || pipe(to_parent)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (long i = 0; i < rounds; i++) {
			if (read(to_child[0], &c, 1) != 1 || write(to_parent[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	ctxt_switches(&v0, &n0);
	for (long i = 0; i < rounds; i++) {
		if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1) {
			perror("pipe transfer");
			return 1;
		}
	}
	ctxt_switches(&v1, &n1);
	waitpid(pid, NULL, 0);
	printf("switches %ld %ld\n", v1 - v0, n1 - n0);
	return 0;
}
