// SPDX-License-Identifier: GPL-2.0
/*
 * Two counters programmed with the same event (M-mode, QEMU virt, -bios none): does the second one count, and
 * does it overflow? A control first: the second counter alone with that event counts and overflows. QEMU keeps
 * one counter per event (pmu_event_ctr_map in target/riscv/pmu.c): the counter that was given the event first
 * holds it until its mhpmevent is written with 0, even while that counter is stopped (mcountinhibit).
 */
#include "probe.h"

#define PERIOD 5000UL
#define LOOPS 10000UL

static volatile u64 irqs, of_bits;

void trap(struct frame *f)
{
	u64 cause = csr_read(mcause);

	(void)f;
	if ((long)cause < 0 && (cause & 0xff) == IRQ_LCOF) {
		irqs++;
		of_bits |= (csr_read(0x323) >> 63) << 3 | (csr_read(0x324) >> 63) << 4;
		csr_clear(mip, MIP_LCOFIP);	/* OF stays set: no second interrupt from the same counter */
		return;
	}
	puts_("unexpected trap, mcause ");
	put_hex(cause);
	puts_("\n");
	finish(1);
}

static void stop_all(void) { csr_write(mcountinhibit, ~0UL); }

int main(void)
{
	u64 c3, c4, stopped_c4, control_count, control_irqs, control_of;

	stop_all();
	csr_set(mie, MIP_LCOFIP);
	csr_set(mstatus, 1UL << 3);	/* MIE */

	/* Control: counter 4 alone with instructions, overflowing after PERIOD. */
	csr_write(0x324, EV_INSTRUCTIONS);
	csr_write(0xb04, -PERIOD);
	csr_clear(mcountinhibit, 1UL << 4);
	spin(LOOPS);
	stop_all();
	control_count = csr_read(0xb04) + PERIOD;
	control_irqs = irqs;
	control_of = of_bits;
	csr_write(0x324, 0);	/* releases the event (QEMU drops its map entry) */

	/* The same event on counters 3 and 4, counter 3 programmed first; counter 4 should overflow after PERIOD. */
	irqs = 0;
	of_bits = 0;
	csr_write(0x323, EV_INSTRUCTIONS);
	csr_write(0x324, EV_INSTRUCTIONS);
	csr_write(0xb03, 0);
	csr_write(0xb04, -PERIOD);
	csr_clear(mcountinhibit, (1UL << 3) | (1UL << 4));
	spin(LOOPS);
	stop_all();
	c3 = csr_read(0xb03);
	c4 = csr_read(0xb04) + PERIOD;

	/* Counter 3 stopped (inhibited) but still programmed, as a stop without reset leaves it: counter 4 alone
	 * runs with the event. */
	csr_write(0x324, 0);
	csr_write(0x324, EV_INSTRUCTIONS);
	csr_write(0xb04, 0);
	csr_clear(mcountinhibit, 1UL << 4);
	spin(LOOPS);
	stop_all();
	stopped_c4 = csr_read(0xb04);

	puts_("control: counter 4 alone counted ");
	put_dec(control_count);
	puts_(", overflow interrupts ");
	put_dec(control_irqs);
	puts_(" (OF bits ");
	put_hex(control_of);
	puts_(")\nsame event: counter 3 counted ");
	put_dec(c3);
	puts_(", counter 4 counted ");
	put_dec(c4);
	puts_(", overflow interrupts ");
	put_dec(irqs);
	puts_(" (OF bits ");
	put_hex(of_bits);
	puts_(")\nheld by a stopped counter 3: counter 4 counted ");
	put_dec(stopped_c4);
	puts_("\n");
	puts_("RESULT same_event control_counts=");
	puts_(control_count >= 2 * LOOPS ? "yes" : "no");
	puts_(" control_overflows=");
	puts_(control_irqs == 1 && control_of == 1UL << 4 ? "yes" : "no");
	puts_(" first_counts=");
	puts_(c3 >= 2 * LOOPS ? "yes" : "no");
	puts_(" second_counts=");
	puts_(c4 >= 2 * LOOPS ? "yes" : c4 == 0 ? "no" : "partly");
	puts_(" second_overflows=");
	puts_(of_bits & (1UL << 4) ? "yes" : "no");
	puts_(" counts_while_held_by_stopped=");
	puts_(stopped_c4 >= 2 * LOOPS ? "yes" : stopped_c4 == 0 ? "no" : "partly");
	puts_("\n");
	finish(0);
}
