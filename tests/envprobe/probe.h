/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the bare-metal environment probes: CSR access, console output, exit. */
#ifndef PROBE_H
#define PROBE_H

typedef unsigned long u64;

#define csr_read(csr) ({ u64 __v; asm volatile("csrr %0, " #csr : "=r"(__v) :: "memory"); __v; })
#define csr_write(csr, v) asm volatile("csrw " #csr ", %0" :: "rK"((u64)(v)) : "memory")
#define csr_set(csr, v) asm volatile("csrs " #csr ", %0" :: "rK"((u64)(v)) : "memory")
#define csr_clear(csr, v) asm volatile("csrc " #csr ", %0" :: "rK"((u64)(v)) : "memory")

/* Sscofpmf: mhpmevent bits */
#define EV_OF (1UL << 63)
#define EV_MINH (1UL << 62)
#define EV_SINH (1UL << 61)
#define EV_UINH (1UL << 60)
#define EV_VSINH (1UL << 59)
#define EV_VUINH (1UL << 58)
#define EV_INSTRUCTIONS 2UL	/* QEMU virt's selector for SBI_PMU_HW_INSTRUCTIONS */
#define IRQ_LCOF 13
#define MIP_LCOFIP (1UL << IRQ_LCOF)

/* A trap frame: x1..x31 at their register number times 8 (slot 2 holds the interrupted sp). */
struct frame { u64 x[32]; };

void puts_(const char *s);
void put_hex(u64 v);
void put_dec(u64 v);
void finish(int failed) __attribute__((noreturn));
/* `n` iterations of a three-instruction loop (addi, bnez and nothing else). */
static inline void spin(u64 n)
{
	asm volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n) :: "memory");
}
#endif
