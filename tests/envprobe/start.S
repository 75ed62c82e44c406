/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry and trap vector of the bare-metal environment probes (M-mode, QEMU virt -bios none, or S-mode under
 * OpenSBI with -DSMODE). Every trap saves the general registers on the trap stack and calls trap(frame) in C,
 * which may change the saved registers and the return address; the vector returns with mret (sret).
 */
#ifdef SMODE
#define XTVEC stvec
#define XRET sret
#define XSCRATCH sscratch
#else
#define XTVEC mtvec
#define XRET mret
#define XSCRATCH mscratch
#endif

	.section .text.entry, "ax"
	.globl _start
_start:
	la sp, stack_top
	la t0, trap_stack_top
	csrw XSCRATCH, t0
	la t0, trap_vector
	csrw XTVEC, t0
	call main
1:	j 1b

	.align 4
trap_vector:
	csrrw sp, XSCRATCH, sp
	addi sp, sp, -256
	.irp n, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	sd x\n, (\n*8)(sp)
	.endr
	csrr t0, XSCRATCH
	sd t0, 16(sp)			/* the interrupted sp in slot 2 */
	mv a0, sp
	call trap
	.irp n, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	ld x\n, (\n*8)(sp)
	.endr
	addi sp, sp, 256
	csrrw sp, XSCRATCH, sp
	XRET

	.section .bss
	.align 4
	.space 8192
stack_top:
	.space 4096
trap_stack_top:
