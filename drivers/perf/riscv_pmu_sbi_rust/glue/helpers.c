// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of the riscv_pmu_sbi_rust module: out-of-line copies of the static inline functions and macros that
 * the Rust glue needs. They hold no logic of their own.
 */

#include <linux/cpu_pm.h>
#include <linux/cpuhotplug.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdomain.h>
#include <linux/math64.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/smp.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/mm_types.h>
#include <linux/of.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <asm/io.h>

#include <asm/cpufeature.h>
#include <asm/delay.h>
#include <asm/irq_regs.h>
#include <asm/sbi.h>
#include <asm/timex.h>

#include "helpers.h"

unsigned long rpmu_sbi_spec_version(void)
{
	return sbi_spec_version;
}

bool rpmu_has_sscofpmf(void)
{
	return riscv_isa_extension_available(NULL, SSCOFPMF);
}

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

void *rpmu_per_cpu_ptr(void __percpu *ptr, unsigned int cpu)
{
	return per_cpu_ptr(ptr, cpu);
}

unsigned int rpmu_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

bool rpmu_cpu_possible(unsigned int cpu)
{
	return cpu_possible(cpu);
}

bool rpmu_event_is_sampling(struct perf_event *event)
{
	return is_sampling_event(event);
}

bool rpmu_event_has_branch_stack(struct perf_event *event)
{
	return has_branch_stack(event);
}

int rpmu_cpuhp_setup_starting_state(const char *name,
				    int (*startup)(unsigned int cpu, struct hlist_node *node),
				    int (*teardown)(unsigned int cpu, struct hlist_node *node))
{
	int ret;

	ret = cpuhp_setup_state_multi(CPUHP_AP_PERF_RISCV_STARTING, name, startup, teardown);
	return ret < 0 ? ret : CPUHP_AP_PERF_RISCV_STARTING;
}

int rpmu_cpuhp_state_add_instance(int state, struct hlist_node *node)
{
	return cpuhp_state_add_instance(state, node);
}

int rpmu_cpuhp_state_remove_instance(int state, struct hlist_node *node)
{
	return cpuhp_state_remove_instance(state, node);
}

void rpmu_cpuhp_remove_multi_state(int state)
{
	cpuhp_remove_multi_state(state);
}

static int rpmu_debugfs_show(struct seq_file *m, void *unused)
{
	struct rpmu_debugfs_file *f = m->private;

	return f->show(m, f->data, f->index);
}

static int rpmu_debugfs_open(struct inode *inode, struct file *file)
{
	return single_open(file, rpmu_debugfs_show, inode->i_private);
}

static const struct file_operations rpmu_debugfs_fops = {
	.owner = THIS_MODULE,
	.open = rpmu_debugfs_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

struct dentry *rpmu_debugfs_create(const char *dir, struct rpmu_debugfs_file *files, unsigned int n)
{
	struct dentry *d = debugfs_create_dir(dir, NULL);
	unsigned int i;

	for (i = 0; i < n; i++)
		debugfs_create_file(files[i].name, 0444, d, &files[i], &rpmu_debugfs_fops);
	return d;
}

void rpmu_debugfs_remove(struct dentry *dir)
{
	debugfs_remove(dir);
}

void rpmu_seq_puts(struct seq_file *m, const char *s)
{
	seq_puts(m, s);
}

int rpmu_call_on_cpu(unsigned int cpu, void (*func)(void *info), void *info)
{
	return smp_call_function_single(cpu, func, info, 1);
}

void rpmu_on_each_cpu(void (*func)(void *info), void *info)
{
	on_each_cpu(func, info, 1);
}

void rpmu_init_work(struct work_struct *work, void (*func)(struct work_struct *work))
{
	INIT_WORK(work, func);
}

bool rpmu_schedule_work(struct work_struct *work)
{
	return schedule_work(work);
}

/* What the per-CPU cookie of a per-CPU interrupt holds on every CPU. */
struct rpmu_percpu_irq {
	bool (*handler)(void *data);
	void *data;
};

/*
 * A tick of the time CSR in ns, with RPMU_TICK_SHIFT fractional bits. The handler's duration, which
 * perf core's sampling rate limit takes, is two reads of the time CSR apart: what sched_clock()
 * reads too, without its epoch and sequence count (about 110 instructions less per interrupt).
 */
#define RPMU_TICK_SHIFT 10
static u32 rpmu_ns_per_tick __read_mostly;

static irqreturn_t rpmu_percpu_irq_handler(int irq, void *dev)
{
	struct rpmu_percpu_irq *pcpu = dev;
	u64 start = get_cycles64();

	if (!pcpu->handler(pcpu->data))
		return IRQ_NONE;
	perf_sample_event_took(mul_u64_u32_shr(get_cycles64() - start, rpmu_ns_per_tick, RPMU_TICK_SHIFT));
	return IRQ_HANDLED;
}

unsigned int rpmu_irq_create_mapping(struct fwnode_handle *fwnode, unsigned long hwirq)
{
	struct irq_domain *domain = irq_find_matching_fwnode(fwnode, DOMAIN_BUS_ANY);

	return domain ? irq_create_mapping(domain, hwirq) : 0;
}

int rpmu_request_percpu_irq(unsigned int irq, const char *name, bool (*handler)(void *data), void *data,
			    void __percpu **cookie)
{
	struct rpmu_percpu_irq __percpu *pcpu;
	int cpu, ret;

	/* The timebase is set at boot (device tree or ACPI); below 239 Hz the multiplier saturates. */
	rpmu_ns_per_tick = min_t(u64, div_u64((u64)NSEC_PER_SEC << RPMU_TICK_SHIFT, max(riscv_timebase, 1UL)),
				 U32_MAX);
	pcpu = alloc_percpu(struct rpmu_percpu_irq);
	if (!pcpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		per_cpu_ptr(pcpu, cpu)->handler = handler;
		per_cpu_ptr(pcpu, cpu)->data = data;
	}
	ret = request_percpu_irq(irq, rpmu_percpu_irq_handler, name, pcpu);
	if (ret) {
		free_percpu(pcpu);
		return ret;
	}
	*cookie = pcpu;
	return 0;
}

void rpmu_free_percpu_irq(unsigned int irq, void __percpu *cookie)
{
	free_percpu_irq(irq, cookie);
	free_percpu(cookie);
}

void rpmu_enable_percpu_irq(unsigned int irq)
{
	enable_percpu_irq(irq, IRQ_TYPE_NONE);
}

void *rpmu_kzalloc(size_t size)
{
	return kzalloc(size, GFP_KERNEL);
}

void rpmu_kfree(void *ptr)
{
	kfree(ptr);
}

u64 rpmu_virt_to_phys(void *ptr)
{
	return virt_to_phys(ptr);
}

void rpmu_warn_once(const char *msg)
{
	WARN_ONCE(1, "riscv_pmu_sbi_rust: %s\n", msg);
}

/*
 * The sample data of an overflow, one per CPU. On the stack the compiler would zero its 256 bytes on every
 * interrupt (CONFIG_INIT_STACK_ALL_ZERO), a memset of about 60 instructions more than finding this copy; perf
 * core needs none of that: perf_sample_data_init() sets the fields every sample has, and perf_prepare_sample()
 * those the event's sample_type asks for, which are all perf core reads but one. That one, `addr`, is read
 * without being asked for (by PERF_SAMPLE_PHYS_ADDR and PERF_SAMPLE_DATA_PAGE_SIZE, and by a BPF program's
 * context), and stays 0 here as on a zeroed stack: it is zeroed at load, and nothing writes it but
 * perf_sample_data_init() with a nonzero address (this driver passes 0) and perf_prepare_sample(), which
 * writes 0.
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

int rpmu_cpu_pm_register_notifier(struct notifier_block *nb)
{
	return cpu_pm_register_notifier(nb);
}

void rpmu_cpu_pm_unregister_notifier(struct notifier_block *nb)
{
	cpu_pm_unregister_notifier(nb);
}
