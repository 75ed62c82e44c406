// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of the module's glue: out-of-line copies of the static inline functions and macros that
 * the Rust glue needs. They hold no logic of their own.
 */

#include <linux/cpu_pm.h>
#include <linux/cpuhotplug.h>
#include <linux/interrupt.h>
#include <linux/irqdomain.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/smp.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/of.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/platform_device.h>
#include <linux/workqueue.h>
#include <asm/io.h>

#include <asm/irq_regs.h>

#include "helpers.h"

bool rpmu_platform_device_bound(const char *name)
{
	struct device *dev;
	bool bound;

	dev = bus_find_device_by_name(&platform_bus_type, NULL, name);
	if (!dev)
		return false;
	bound = device_is_bound(dev);
	put_device(dev);
	return bound;
}

void rpmu_of_node_put(struct device_node *node)
{
	of_node_put(node);
}

void rpmu_preempt_disable(void)
{
	preempt_disable();
}

void rpmu_preempt_enable(void)
{
	preempt_enable();
}

void __percpu *rpmu_alloc_percpu(size_t size, size_t align)
{
	return __alloc_percpu(size, align);
}

int rpmu_cpuhp_setup_state_multi(int state, const char *name,
				 int (*startup)(unsigned int cpu, struct hlist_node *node),
				 int (*teardown)(unsigned int cpu, struct hlist_node *node))
{
	return cpuhp_setup_state_multi(state, name, startup, teardown);
}

static int rpmu_debugfs_show(struct seq_file *m, void *unused)
{
	struct rpmu_debugfs_file *f = m->private;

	return f->show(m, f->data, f->index);
}

DEFINE_SHOW_ATTRIBUTE(rpmu_debugfs);

struct dentry *rpmu_debugfs_create(const char *dir, struct rpmu_debugfs_file *files, unsigned int n)
{
	struct dentry *d = debugfs_create_dir(dir, NULL);
	unsigned int i;

	for (i = 0; i < n; i++)
		debugfs_create_file(files[i].name, 0444, d, &files[i], &rpmu_debugfs_fops);
	return d;
}

void rpmu_on_each_cpu(void (*func)(void *info), void *info)
{
	on_each_cpu(func, info, 1);
}

void rpmu_queue_work(struct work_struct *work, void (*func)(struct work_struct *work))
{
	INIT_WORK(work, func);
	schedule_work(work);
}

unsigned int rpmu_irq_create_mapping(struct fwnode_handle *fwnode, unsigned long hwirq)
{
	struct irq_domain *domain = irq_find_matching_fwnode(fwnode, DOMAIN_BUS_ANY);

	return domain ? irq_create_mapping(domain, hwirq) : 0;
}

int rpmu_request_percpu_irq(unsigned int irq, const char *name, irq_handler_t handler, void *data,
			    void __percpu **cookie)
{
	void * __percpu *pcpu;
	int cpu, ret;

	pcpu = alloc_percpu(void *);
	if (!pcpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		*per_cpu_ptr(pcpu, cpu) = data;
	ret = request_percpu_irq(irq, handler, name, pcpu);
	if (ret) {
		free_percpu(pcpu);
		return ret;
	}
	*cookie = pcpu;
	return 0;
}

u64 rpmu_virt_to_phys(void *ptr)
{
	return virt_to_phys(ptr);
}

unsigned long rpmu_local_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rpmu_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

void rpmu_lockdep_assert_irqs_disabled(void)
{
	lockdep_assert_irqs_disabled();
}

void rpmu_warn_once(const char *msg)
{
	WARN_ONCE(1, KBUILD_MODNAME ": %s\n", msg);
}

#ifndef RPMU_NO_SAMPLE_EXPORTS
/*
 * The sample data of an overflow, one per CPU, so that the interrupt does not zero 256 bytes of stack
 * (CONFIG_INIT_STACK_ALL_ZERO) on every sample: perf_sample_data_init() sets the fields every sample has, and
 * perf_prepare_sample() those the event's sample_type asks for. The one field perf core may read unasked,
 * `addr` (PERF_SAMPLE_PHYS_ADDR, PERF_SAMPLE_DATA_PAGE_SIZE, a BPF program's context), stays 0 as on a zeroed
 * stack: it is zeroed at load, and only perf_sample_data_init() with a nonzero address (the callers pass 0) and
 * perf_prepare_sample(), which writes 0, write it.
 */
static DEFINE_PER_CPU(struct perf_sample_data, rpmu_sample_data);

int rpmu_event_overflow(struct perf_event *event, u64 last_period)
{
	/*
	 * The overflow interrupt's handler is the only user, in hard IRQ context with interrupts off, and
	 * perf_event_overflow() is done with the data when it returns.
	 */
	struct perf_sample_data *data = this_cpu_ptr(&rpmu_sample_data);

	perf_sample_data_init(data, 0, last_period);
	return perf_event_overflow(event, data, get_irq_regs());
}
#else
int rpmu_event_overflow(struct perf_event *event, u64 last_period)
{
	/*
	 * The kernel does not export perf_event_overflow() to modules (Kbuild defines RPMU_NO_SAMPLE_EXPORTS), and
	 * the module refuses every sampling event at event_init: there is no sample to report.
	 */
	return 0;
}
#endif

int rpmu_cpu_pm_register_notifier(struct notifier_block *nb)
{
	return cpu_pm_register_notifier(nb);
}

void rpmu_cpu_pm_unregister_notifier(struct notifier_block *nb)
{
	cpu_pm_unregister_notifier(nb);
}
