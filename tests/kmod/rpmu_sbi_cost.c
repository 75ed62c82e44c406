// SPDX-License-Identifier: GPL-2.0
/*
 * Bench module: the cost of the SBI PMU calls a driver makes on its hot paths, measured on the firmware itself,
 * whichever driver is loaded. `make bench` loads it in each boot to know how much of a context switch is the
 * firmware's (a floor no driver can go below without snapshot memory).
 *
 * On load, on the current CPU with interrupts disabled, for each set of counters the benchmarks use (k hardware
 * events for k = 1, 2, 4, 8 in the order bench.h takes them, 3 firmware events, 5 hardware + 3 firmware), it
 * configures and starts one counter per event with counter_config_matching (any free counter the firmware
 * finds), then times `loops` rounds of one counter_stop and one counter_start over all of them (the calls a
 * driver makes to switch a task's counters out and back in), and releases them (counter_stop with RESET). It
 * also times counter_fw_read of one firmware counter and a counter_config_matching + release pair. It prints one
 * line per figure:
 *
 *   rpmu_sbi_cost: <name> calls=<calls per round> ns_x10=<guest ns per round, times 10>
 *
 * and unloads cleanly. The timer is ktime: under QEMU's -icount shift=0 a guest ns is a guest instruction, so
 * the figures count the instructions of the calls (kernel and firmware side), repeatably.
 */

#include <linux/irqflags.h>
#include <linux/module.h>
#include <linux/timekeeping.h>
#include <asm/sbi.h>

static unsigned int loops = 1000;
module_param(loops, uint, 0444);
MODULE_PARM_DESC(loops, "timed rounds per figure");

/* SBI PMU event indexes (SBI specification, PMU extension): type << 16 | code. */
#define HW_EVENT(code)		(code)
#define CACHE_EVENT(id, op, res) ((1UL << 16) | ((id) << 3) | ((op) << 1) | (res))
#define FW_EVENT(code)		((0xfUL << 16) | (code))

/* The hardware events of tests/bench/progs/bench.h, in its order; hw:K above 5 starts over. */
static const unsigned long hw_events[] = {
	HW_EVENT(1),		/* cycles */
	HW_EVENT(2),		/* instructions */
	CACHE_EVENT(3, 0, 1),	/* dTLB read miss */
	CACHE_EVENT(3, 1, 1),	/* dTLB write miss */
	CACHE_EVENT(4, 0, 1),	/* iTLB read miss */
};

/* Its firmware events: set_timer, illegal instruction, IPI sent. */
static const unsigned long fw_events[] = { FW_EVENT(5), FW_EVENT(4), FW_EVENT(6) };

struct counter_set {
	const char *name;
	unsigned int hw, fw;
};

static const struct counter_set sets[] = {
	{ "stop_start_hw1", 1, 0 }, { "stop_start_hw2", 2, 0 }, { "stop_start_hw4", 4, 0 },
	{ "stop_start_hw8", 8, 0 }, { "stop_start_fw3", 0, 3 }, { "stop_start_hw5fw3", 5, 3 },
};

static unsigned long all_counters;

static struct sbiret pmu_call(int fid, unsigned long a0, unsigned long a1, unsigned long a2,
			      unsigned long a3, unsigned long a4)
{
	return sbi_ecall(SBI_EXT_PMU, fid, a0, a1, a2, a3, a4, 0);
}

/* A free counter for EVENT, configured and started from 0; returns its index or a negative SBI error. */
static long config_counter(unsigned long event)
{
	struct sbiret ret = pmu_call(SBI_EXT_PMU_COUNTER_CFG_MATCH, 0, all_counters,
				     SBI_PMU_CFG_FLAG_CLEAR_VALUE | SBI_PMU_CFG_FLAG_AUTO_START, event, 0);

	return ret.error ? ret.error : (long)ret.value;
}

static void release(unsigned long mask)
{
	if (mask)
		pmu_call(SBI_EXT_PMU_COUNTER_STOP, 0, mask, SBI_PMU_STOP_FLAG_RESET, 0, 0);
}

static void report(const char *name, unsigned int calls, u64 ns)
{
	pr_info("rpmu_sbi_cost: %s calls=%u ns_x10=%llu\n", name, calls, div_u64(ns * 10, loops));
}

/* Times LOOPS rounds of stop + start over the counters of SET; false if the firmware would not give them. */
static bool measure_set(const struct counter_set *set)
{
	unsigned long mask = 0, flags;
	unsigned int i;
	u64 t0, t1;
	long idx;
	bool ok = true;

	for (i = 0; i < set->hw + set->fw; i++) {
		idx = config_counter(i < set->hw ? hw_events[i % ARRAY_SIZE(hw_events)] : fw_events[i - set->hw]);
		if (idx < 0 || idx >= BITS_PER_LONG) {
			pr_err("rpmu_sbi_cost: %s: no counter for event %u (SBI error %ld)\n", set->name, i, idx);
			ok = false;
			break;
		}
		mask |= BIT(idx);
	}
	if (ok) {
		local_irq_save(flags);
		t0 = ktime_get_ns();
		for (i = 0; i < loops; i++) {
			pmu_call(SBI_EXT_PMU_COUNTER_STOP, 0, mask, 0, 0, 0);
			pmu_call(SBI_EXT_PMU_COUNTER_START, 0, mask, 0, 0, 0);
		}
		t1 = ktime_get_ns();
		local_irq_restore(flags);
		report(set->name, 2, t1 - t0);
	}
	release(mask);
	return ok;
}

/* Times LOOPS counter_fw_read calls of one running firmware counter. */
static bool measure_fw_read(void)
{
	unsigned long flags;
	unsigned int i;
	u64 t0, t1;
	long idx = config_counter(fw_events[0]);

	if (idx < 0 || idx >= BITS_PER_LONG) {
		pr_err("rpmu_sbi_cost: fw_read: no counter (SBI error %ld)\n", idx);
		return false;
	}
	local_irq_save(flags);
	t0 = ktime_get_ns();
	for (i = 0; i < loops; i++)
		pmu_call(SBI_EXT_PMU_COUNTER_FW_READ, idx, 0, 0, 0, 0);
	t1 = ktime_get_ns();
	local_irq_restore(flags);
	report("fw_read", 1, t1 - t0);
	release(BIT(idx));
	return true;
}

/* Times LOOPS rounds of counter_config_matching (started) and its release by counter_stop with RESET. */
static bool measure_config(void)
{
	unsigned long flags;
	unsigned int i;
	u64 t0, t1;
	long idx = 0;

	local_irq_save(flags);
	t0 = ktime_get_ns();
	for (i = 0; i < loops && idx >= 0; i++) {
		idx = config_counter(hw_events[2]);
		if (idx >= 0 && idx < BITS_PER_LONG)
			release(BIT(idx));
	}
	t1 = ktime_get_ns();
	local_irq_restore(flags);
	if (idx < 0 || idx >= BITS_PER_LONG) {
		pr_err("rpmu_sbi_cost: config: no counter (SBI error %ld)\n", idx);
		return false;
	}
	report("config_release", 2, t1 - t0);
	return true;
}

static int __init rpmu_sbi_cost_init(void)
{
	struct sbiret ret;
	unsigned int i, failed = 0;

	if (sbi_probe_extension(SBI_EXT_PMU) <= 0) {
		pr_err("rpmu_sbi_cost: the firmware has no SBI PMU extension\n");
		return -ENODEV;
	}
	if (!loops)
		return -EINVAL;
	ret = pmu_call(SBI_EXT_PMU_NUM_COUNTERS, 0, 0, 0, 0, 0);
	if (ret.error || ret.value < 3 || ret.value > BITS_PER_LONG)
		return -ENODEV;
	/* Every counter but time (index 1), which is no PMU counter. */
	all_counters = GENMASK(ret.value - 1, 0) & ~BIT(1);

	preempt_disable();
	for (i = 0; i < ARRAY_SIZE(sets); i++)
		failed += !measure_set(&sets[i]);
	failed += !measure_fw_read();
	failed += !measure_config();
	preempt_enable();
	pr_info("rpmu_sbi_cost: done, %u figure(s) failed\n", failed);
	return failed ? -EIO : 0;
}

static void __exit rpmu_sbi_cost_exit(void)
{
}

module_init(rpmu_sbi_cost_init);
module_exit(rpmu_sbi_cost_exit);
MODULE_DESCRIPTION("Bench module: cost of the SBI PMU calls on the context-switch path");
MODULE_LICENSE("GPL");
