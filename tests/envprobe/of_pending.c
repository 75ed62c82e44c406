// SPDX-License-Identifier: GPL-2.0
/*
 * Restarting a counter while its overflow interrupt is pending (S-mode payload under OpenSBI, QEMU virt with
 * Sscofpmf): a counter of instructions overflows every PERIOD; the interrupt handler stops it and starts it
 * again with -PERIOD through SBI calls, in two orders. "clear first" clears sip.LCOFIP before the start (as
 * both Linux drivers do in their own overflow handler); "start while pending" starts first and clears after.
 * OpenSBI's counter start clears the counter's OF bit only when mip.LCOFIP is clear, so in the second order OF
 * stays set and the counter never raises another overflow interrupt (QEMU also sets no overflow timer for a
 * counter written while its OF bit is set).
 */
#include "probe.h"

#define PERIOD 10000UL
#define LOOPS 50000UL	/* about 100,000 instructions: 10 periods */
#define PMU 0x504D55

struct ret { long err, val; };

static struct ret sbi(long fid, long a0, long a1, long a2, long a3, long a4)
{
	register long r0 asm("a0") = a0, r1 asm("a1") = a1, r2 asm("a2") = a2, r3 asm("a3") = a3, r4 asm("a4") = a4;
	register long r6 asm("a6") = fid, r7 asm("a7") = PMU;
	asm volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r2), "r"(r3), "r"(r4), "r"(r6), "r"(r7) : "memory");
	return (struct ret){ r0, r1 };
}

static long ctr;
static volatile int order;	/* 0: clear first, 1: start while pending */
static volatile u64 irqs;

void trap(struct frame *f)
{
	u64 cause = csr_read(scause);

	(void)f;
	if ((long)cause < 0 && (cause & 0xff) == IRQ_LCOF) {
		irqs++;
		sbi(4, ctr, 1, 0, 0, 0);	/* stop */
		if (order == 0)
			csr_clear(sip, MIP_LCOFIP);
		sbi(3, ctr, 1, 1, -PERIOD, 0);	/* start, SET_INIT_VALUE */
		if (order == 1)
			csr_clear(sip, MIP_LCOFIP);
		return;
	}
	puts_("unexpected trap, scause ");
	put_hex(cause);
	puts_("\n");
	finish(1);
}

static u64 run(int o)
{
	struct ret r;

	order = o;
	irqs = 0;
	/* instructions, on any of the programmable counters 3-18, cleared */
	r = sbi(1 + 1, 0, 0x7fff8, 2, 2, 0);
	if (r.err) {
		puts_("counter_config_matching failed\n");
		finish(1);
	}
	ctr = r.val;
	sbi(3, ctr, 1, 1, -PERIOD, 0);
	spin(LOOPS);
	sbi(4, ctr, 1, 1, 0, 0);	/* stop, RESET */
	return irqs;
}

int main(void)
{
	u64 a, b;

	csr_set(sie, MIP_LCOFIP);
	csr_set(sstatus, 1UL << 1);	/* SIE */
	a = run(0);
	b = run(1);
	puts_("overflow interrupts in about 10 periods: clear first ");
	put_dec(a);
	puts_(", start while pending ");
	put_dec(b);
	puts_(" (counter ");
	put_dec(ctr);
	puts_(")\nRESULT of_pending clear_first_keeps_interrupting=");
	puts_(a >= 9 ? "yes" : "no");
	puts_(" start_while_pending_keeps_interrupting=");
	puts_(b >= 9 ? "yes" : b == 1 ? "no" : "partly");
	puts_("\n");
	finish(0);
}
