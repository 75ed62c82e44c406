// SPDX-License-Identifier: GPL-2.0
/*
 * LCOFI with V=1 (M-mode, QEMU virt with the hypervisor extension, -bios none): a counter that counts
 * instructions in one virtual mode only (VU with -DVS=0, VS with -DVS=1: every other mode inhibited, as KVM's
 * host asks for a guest's user-only or kernel-only event) is set to overflow after PERIOD of them; the probe
 * enters that mode (mret with MPV=1, G-stage and VS-stage translation off) and loops. Does QEMU raise the
 * overflow interrupt while V=1, and after how many instructions of that mode?
 */
#include "probe.h"

#define PERIOD 5000UL
#define LOOPS 100000UL
#define MSTATUS_MPV (1UL << 39)
#define MSTATUS_MPP (3UL << 11)

static volatile u64 irqs, irq_mpv, irq_mpp, irq_ctr, irq_of;

static void guest(void)
{
	spin(LOOPS);
	asm volatile("ecall");
	for (;;)
		;
}

void trap(struct frame *f)
{
	u64 cause = csr_read(mcause), st = csr_read(mstatus), end;

	(void)f;
	if ((long)cause < 0 && (cause & 0xff) == IRQ_LCOF) {
		if (!irqs++) {
			irq_mpv = !!(st & MSTATUS_MPV);
			irq_mpp = (st & MSTATUS_MPP) >> 11;
			irq_ctr = csr_read(0xb03);
			irq_of = csr_read(0x323) >> 63;
		}
		csr_clear(mip, MIP_LCOFIP);
		return;
	}
	/* 8: ecall from U or VU, 10: from VS */
	if (cause == 8 || cause == 10) {
		csr_write(mcountinhibit, ~0UL);
		end = csr_read(0xb03) + PERIOD;
		puts_(VS ? "VS" : "VU");
		puts_("-only counter: ");
		put_dec(end);
		puts_(" instructions counted in that mode; overflow interrupts ");
		put_dec(irqs);
		puts_(", the first taken with MPV=");
		put_dec(irq_mpv);
		puts_(" MPP=");
		put_dec(irq_mpp);
		puts_(", OF=");
		put_dec(irq_of);
		puts_(", counter ");
		put_dec(irq_ctr);
		puts_(" past the overflow\n");
		puts_(VS ? "RESULT vs_lcofi" : "RESULT vu_lcofi");
		puts_(" counts=");
		puts_(end >= 2 * LOOPS && end < 2 * LOOPS + 100 ? "yes" : "no");
		puts_(" lcofi_with_v1=");
		puts_(irqs == 1 && irq_mpv == 1 && irq_mpp == (VS ? 1 : 0) && irq_of == 1 ? "yes" : "no");
		puts_(" on_time=");
		puts_(irqs && irq_ctr < 100 ? "yes" : "no");
		puts_("\n");
		finish(0);
	}
	puts_("unexpected trap, mcause ");
	put_hex(cause);
	puts_(" mepc ");
	put_hex(csr_read(mepc));
	puts_("\n");
	finish(1);
}

int main(void)
{
	u64 inh = EV_MINH | EV_SINH | EV_UINH | (VS ? EV_VUINH : EV_VSINH);

	csr_write(mcountinhibit, ~0UL);
	/* PMP: everything for the lower modes. */
	csr_write(pmpaddr0, ~0UL >> 10);
	csr_write(pmpcfg0, 0x1f);
	csr_write(0x680, 0);	/* hgatp: bare */
	csr_write(0x280, 0);	/* vsatp: bare */
	csr_write(satp, 0);
	csr_write(0x323, EV_INSTRUCTIONS | inh);
	csr_write(0xb03, -PERIOD);
	csr_set(mie, MIP_LCOFIP);
	csr_clear(mstatus, MSTATUS_MPP);
	csr_set(mstatus, MSTATUS_MPV | (VS ? 1UL << 11 : 0));
	csr_write(mepc, (u64)guest);
	csr_clear(mcountinhibit, 1UL << 3);
	asm volatile("mret");
	return 0;
}
