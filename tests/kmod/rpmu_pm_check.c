// SPDX-License-Identifier: GPL-2.0
/*
 * Test module: checks what a PMU driver's CPU PM notifier does, the way an idle driver or suspend would drive it.
 *
 * On load it opens a pinned per-CPU instructions and cycles counter on every online CPU, then on each of those CPUs,
 * with interrupts disabled, runs `cycles` times: a busy loop (counted), cpu_pm_enter(), the same loop (the
 * counters must stand still: the CPU is "in a low-power state" where they may lose their state), cpu_pm_exit(),
 * the loop again (counted again). It prints one line per CPU and a summary line, and fails to load (-EIO) if a
 * counter moved while the CPU was in the low-power state or did not count after it, so the check that loads it
 * sees the result in insmod's exit status and in the kernel log.
 */

#include <linux/cpu.h>
#include <linux/cpu_pm.h>
#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/smp.h>

static unsigned int cycles = 50;
module_param(cycles, uint, 0444);
MODULE_PARM_DESC(cycles, "low-power enter/exit cycles per CPU");

#define NR_EVENTS 2
static const u64 event_config[NR_EVENTS] = { PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES };
static const char *const event_name[NR_EVENTS] = { "instructions", "cycles" };

struct pm_result {
	struct perf_event *events[NR_EVENTS];
	unsigned int pm_errors;		/* cpu_pm_enter() or cpu_pm_exit() failed */
	unsigned int read_errors;	/* perf_event_read_local() failed */
	unsigned int moved;		/* counts that grew while in the low-power state */
	unsigned int idle;		/* counts that did not grow after the exit */
	unsigned int counted;		/* counts that grew before the enter */
	u64 during[NR_EVENTS];		/* sum of the counts made while in the low-power state */
	u64 after[NR_EVENTS];		/* sum of the counts made after the exit */
};

static noinline void busy(void)
{
	unsigned int i;

	for (i = 0; i < 20000; i++)
		barrier();
}

/*
 * Reads the counts as perf_event_read_local() does (it is not exported): the event is active on this CPU, whose
 * interrupts are disabled, so its PMU's read callback brings the count up to date.
 */
static bool read_all(struct pm_result *res, u64 *values)
{
	struct perf_event *event;
	int i;

	for (i = 0; i < NR_EVENTS; i++) {
		event = res->events[i];
		if (READ_ONCE(event->state) != PERF_EVENT_STATE_ACTIVE ||
		    READ_ONCE(event->oncpu) != smp_processor_id()) {
			res->read_errors++;
			return false;
		}
		event->pmu->read(event);
		values[i] = local64_read(&event->count);
	}
	return true;
}

static void pm_cycles_here(void *info)
{
	struct pm_result *res = info;
	u64 v0[NR_EVENTS], v1[NR_EVENTS], v2[NR_EVENTS], v3[NR_EVENTS], v4[NR_EVENTS], v5[NR_EVENTS];
	unsigned int n;
	int i;

	for (n = 0; n < cycles; n++) {
		if (!read_all(res, v0))
			return;
		busy();
		read_all(res, v1);
		if (cpu_pm_enter()) {
			res->pm_errors++;
			return;
		}
		read_all(res, v2);
		busy();
		read_all(res, v3);
		if (cpu_pm_exit())
			res->pm_errors++;
		read_all(res, v4);
		busy();
		if (!read_all(res, v5))
			return;
		for (i = 0; i < NR_EVENTS; i++) {
			if (v1[i] > v0[i])
				res->counted++;
			if (v3[i] != v2[i])
				res->moved++;
			if (v5[i] <= v4[i])
				res->idle++;
			res->during[i] += v3[i] - v2[i];
			res->after[i] += v5[i] - v4[i];
		}
	}
}

static int __init rpmu_pm_check_init(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(attr),
		.pinned = 1,
	};
	unsigned int cpu, bad = 0, tested = 0;
	int i, ret = 0;

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct pm_result res = {};

		for (i = 0; i < NR_EVENTS; i++) {
			attr.config = event_config[i];
			res.events[i] = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
			if (IS_ERR(res.events[i])) {
				ret = PTR_ERR(res.events[i]);
				pr_err("rpmu_pm_check: cpu %u: cannot open %s: %d\n", cpu, event_name[i], ret);
				while (--i >= 0)
					perf_event_release_kernel(res.events[i]);
				goto out;
			}
		}
		smp_call_function_single(cpu, pm_cycles_here, &res, 1);
		for (i = 0; i < NR_EVENTS; i++)
			perf_event_release_kernel(res.events[i]);

		pr_info("rpmu_pm_check: cpu %u: %u cycles, counted before %u, moved in low power %u, idle after %u, pm errors %u, read errors %u; instructions during %llu after %llu, cycles during %llu after %llu\n",
			cpu, cycles, res.counted, res.moved, res.idle, res.pm_errors, res.read_errors,
			res.during[0], res.after[0], res.during[1], res.after[1]);
		tested++;
		if (res.moved || res.idle || res.pm_errors || res.read_errors ||
		    res.counted != cycles * NR_EVENTS)
			bad++;
	}
out:
	cpus_read_unlock();
	if (ret)
		return ret;
	pr_info("rpmu_pm_check: %u of %u CPUs passed\n", tested - bad, tested);
	return bad ? -EIO : 0;
}

static void __exit rpmu_pm_check_exit(void)
{
}

module_init(rpmu_pm_check_init);
module_exit(rpmu_pm_check_exit);
MODULE_DESCRIPTION("CPU PM notifier check for RISC-V PMU drivers");
MODULE_LICENSE("GPL");
