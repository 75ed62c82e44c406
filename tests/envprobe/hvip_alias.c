// SPDX-License-Identifier: GPL-2.0
/*
 * hvip bit 13 and the real LCOFIP (M-mode, QEMU virt with the hypervisor extension and AIA, -bios none). A
 * hypervisor with AIA (KVM) injects a guest's counter overflow interrupt as a virtual interrupt: hvien bit 13
 * set, hideleg bit 13 clear, hvip bit 13 set or cleared, and it writes its whole hvip value at every guest
 * entry. Per the AIA specification that bit is then a separate bit, not an alias of mip.LCOFIP (the host's
 * own overflow interrupt). The probe checks both directions:
 *   clears_real:   a real overflow makes mip.LCOFIP pending; hvip is then written with bit 13 clear. Still
 *                  pending?
 *   sets_real:     with mip.LCOFIP clear, hvip is written with bit 13 set. Does mip.LCOFIP read as pending?
 * A control first: the counter overflow sets mip.LCOFIP and OF, with nothing written to hvip.
 */
#include "probe.h"

#define CSR_HIDELEG 0x603
#define CSR_HVIEN 0x608
#define CSR_HVIP 0x645

#define W(csr, v) asm volatile("csrw " #csr ", %0" :: "r"((u64)(v)) : "memory")
#define R(csr) ({ u64 __v; asm volatile("csrr %0, " #csr : "=r"(__v) :: "memory"); __v; })

void trap(struct frame *f)
{
	(void)f;
	puts_("unexpected trap, mcause ");
	put_hex(csr_read(mcause));
	puts_("\n");
	finish(1);
}

/* Counter 3 overflows after 1,000 instructions; returns mip after the loop (M-mode interrupts off). */
static u64 overflow(void)
{
	csr_write(mcountinhibit, ~0UL);
	csr_write(0x323, EV_INSTRUCTIONS);
	csr_write(0xb03, -1000UL);
	csr_clear(mcountinhibit, 1UL << 3);
	spin(5000);
	csr_write(mcountinhibit, ~0UL);
	return csr_read(mip);
}

int main(void)
{
	u64 control, of, clears, sets, hv;

	csr_clear(mstatus, 1UL << 3);	/* MIE off: nothing is taken, only pending bits are looked at */
	csr_write(mideleg, MIP_LCOFIP);	/* as OpenSBI: LCOFI goes to (H)S */
	csr_set(mie, MIP_LCOFIP);
	W(0x603, 0);			/* hideleg: bit 13 not delegated to VS */
	W(0x608, MIP_LCOFIP);		/* hvien: bit 13 is a virtual interrupt of VS (as KVM with AIA) */

	control = overflow() & MIP_LCOFIP;
	of = csr_read(0x323) >> 63;

	/* Real overflow pending, then the hypervisor's hvip write with bit 13 clear. */
	W(0x645, 0);
	clears = !(csr_read(mip) & MIP_LCOFIP);

	/* Real LCOFIP clear, then hvip written with bit 13 set (an injected guest overflow). */
	csr_clear(mip, MIP_LCOFIP);
	csr_write(0x323, EV_INSTRUCTIONS);	/* OF clear again */
	W(0x645, MIP_LCOFIP);
	hv = R(0x645);
	sets = !!(csr_read(mip) & MIP_LCOFIP);
	W(0x645, 0);

	puts_("control: overflow set mip.LCOFIP ");
	put_dec(!!control);
	puts_(", OF ");
	put_dec(of);
	puts_("\nhvip written with bit 13 clear while the real LCOFIP was pending: mip.LCOFIP ");
	puts_(clears ? "cleared" : "still pending");
	puts_("\nhvip written with bit 13 set (reads back ");
	put_hex(hv);
	puts_("): mip.LCOFIP ");
	puts_(sets ? "pending" : "clear");
	puts_("\nRESULT hvip_alias control=");
	puts_(control && of ? "yes" : "no");
	puts_(" hvip_write_clears_real_lcofip=");
	puts_(clears ? "yes" : "no");
	puts_(" hvip_write_sets_real_lcofip=");
	puts_(sets ? "yes" : "no");
	puts_("\n");
	finish(0);
}
