// SPDX-License-Identifier: GPL-2.0
/*
 * A fixed, static workload for exact counts: `workload N` runs a loop of N iterations whose body the compiler
 * cannot remove, then exits. Statically linked, so the user-mode instruction count does not depend on the
 * dynamic loader.
 */
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000;
	unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		__asm__ volatile("add %0, %0, %1" : "+r"(acc) : "r"(i));
	return acc == 1;
}
