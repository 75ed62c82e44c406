// SPDX-License-Identifier: GPL-2.0
/*
 * A workload with two hot functions for sampling: `hotspots N` calls heavy() and light() in turn N times;
 * heavy() runs twice as many loop iterations as light(), so a sampling profile should give heavy() about two
 * thirds of the samples and light() about one third.
 */
#include <stdlib.h>

static unsigned long spin(unsigned long n, unsigned long acc)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		__asm__ volatile("add %0, %0, %1" : "+r"(acc) : "r"(i));
	return acc;
}

__attribute__((noinline)) unsigned long heavy(unsigned long acc)
{
	return spin(20000, acc);
}

__attribute__((noinline)) unsigned long light(unsigned long acc)
{
	return spin(10000, acc);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 500;
	unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc = light(heavy(acc));
	return acc == 1;
}
