/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reads of the counter CSRs from user mode, for the programs that check who may read them (perm, uaccess): a read
 * the kernel does not allow (its scounteren bit clear) raises SIGILL, which try_read() turns into
 * "sigill" once the program has installed on_sigill() as the signal's handler.
 */
#ifndef RISCV_PMU_SBI_COUNTER_CSR_H
#define RISCV_PMU_SBI_COUNTER_CSR_H

#include <setjmp.h>
#include <stdint.h>

static sigjmp_buf counter_trap;

static inline void on_sigill(int sig)
{
	(void)sig;
	siglongjmp(counter_trap, 1);
}

/*
 * Reads counter CSR 0xc00 + idx (0..31: cycle, time, instret, hpmcounter3..31); the CSR number is part of the
 * instruction, hence the table.
 */
static inline uint64_t csr_read_idx(unsigned int idx)
{
	uint64_t v = 0;

#define CASE(n) case n: asm volatile("csrr %0, " #n " + 0xc00" : "=r"(v)); break
	switch (idx) {
	CASE(0); CASE(1); CASE(2); CASE(3); CASE(4); CASE(5); CASE(6); CASE(7);
	CASE(8); CASE(9); CASE(10); CASE(11); CASE(12); CASE(13); CASE(14); CASE(15);
	CASE(16); CASE(17); CASE(18); CASE(19); CASE(20); CASE(21); CASE(22); CASE(23);
	CASE(24); CASE(25); CASE(26); CASE(27); CASE(28); CASE(29); CASE(30); CASE(31);
	}
#undef CASE
	return v;
}

/* "ok" when counter CSR 0xc00 + idx reads from user mode, "sigill" when the read traps. */
static inline const char *try_read(unsigned int idx)
{
	if (sigsetjmp(counter_trap, 1))
		return "sigill";
	(void)csr_read_idx(idx);
	return "ok";
}

#endif
