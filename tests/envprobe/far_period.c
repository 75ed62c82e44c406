// SPDX-License-Identifier: GPL-2.0
/*
 * A counter written with a value whose overflow lies more than 2^63 ns of QEMU's virtual clock ahead, then
 * rewritten with a near one (M-mode, QEMU virt, -bios none). QEMU raises the overflow interrupt of a cycles or
 * instructions counter from a timer (target/riscv/pmu.c, riscv_pmu_setup_timer()); a deadline beyond INT64_MAX
 * is cut there and the rest kept in the counter's irq_overflow_left, which the timer callback honours first:
 * it re-arms the timer that much later and returns without raising the interrupt. Does a stale remainder from
 * the far write swallow the near period's interrupt? Linux's SBI PMU driver starts a counter of a counting
 * event, and KVM's overflow handler restarts a guest's sampling counter, with 0x8000000000000001 (minus half
 * the counter range): such a far write.
 * control:  the near period alone overflows once.
 * far:      the same after a far write to the same counter.
 */
#include "probe.h"

#define PERIOD 5000UL
#define LOOPS 20000UL

static volatile u64 irqs;

void trap(struct frame *f)
{
	u64 cause = csr_read(mcause);

	(void)f;
	if ((long)cause < 0 && (cause & 0xff) == IRQ_LCOF) {
		irqs++;
		csr_clear(mip, MIP_LCOFIP);
		return;
	}
	puts_("unexpected trap, mcause ");
	put_hex(cause);
	puts_("\n");
	finish(1);
}

/* Counter 3 (instructions) runs LOOPS iterations from `first`, then from -PERIOD; returns its interrupts
 * and leaves the final counter value in *end. */
static u64 run(u64 first, int far, u64 *end)
{
	irqs = 0;
	csr_write(mcountinhibit, ~0UL);
	csr_write(0x323, EV_INSTRUCTIONS);
	if (far) {
		csr_write(0xb03, first);
		csr_clear(mcountinhibit, 1UL << 3);
		spin(100);
		csr_write(mcountinhibit, ~0UL);
	}
	csr_write(0xb03, -PERIOD);
	csr_clear(mcountinhibit, 1UL << 3);
	spin(LOOPS);
	csr_write(mcountinhibit, ~0UL);
	*end = csr_read(0xb03);
	csr_write(0x323, 0);
	return irqs;
}

int main(void)
{
	u64 control, far, c_end, f_end;

	csr_set(mie, MIP_LCOFIP);
	csr_set(mstatus, 1UL << 3);	/* MIE */
	control = run(0, 0, &c_end);
	far = run(0x8000000000000001UL, 1, &f_end);
	puts_("near period alone: ");
	put_dec(control);
	puts_(" overflow interrupts (counter ended at ");
	put_dec(c_end);
	puts_(")\nnear period after a far write: ");
	put_dec(far);
	puts_(" overflow interrupts (counter ended at ");
	put_dec(f_end);
	puts_(")\nRESULT far_period control_overflows=");
	puts_(control == 1 && c_end > PERIOD && c_end < 2 * LOOPS ? "yes" : "no");
	puts_(" overflows_after_far_write=");
	puts_(far == 1 ? "yes" : far == 0 && f_end > PERIOD && f_end < 2 * LOOPS ? "no" : "other");
	puts_("\n");
	finish(0);
}
