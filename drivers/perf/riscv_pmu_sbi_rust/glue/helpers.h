/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of the module's glue.
 *
 * Rust cannot call static inline functions or expand macros, so each one the glue needs is wrapped here in a
 * small out-of-line function. Every name starts with rpmu_ so the module-local bindgen rule can allowlist them.
 */
#ifndef RPMU_HELPERS_H
#define RPMU_HELPERS_H

#include <linux/interrupt.h>
#include <linux/types.h>

struct perf_event;
struct device_node;

/* Whether a platform device of this name exists and has a driver bound to it. */
bool rpmu_platform_device_bound(const char *name);

/* of_node_put() is a static inline without CONFIG_OF_DYNAMIC. */
void rpmu_of_node_put(struct device_node *node);

/* preempt_disable() and preempt_enable() are macros. */
void rpmu_preempt_disable(void);
void rpmu_preempt_enable(void);

/* Per-CPU allocations: __alloc_percpu() is a macro. */
void __percpu *rpmu_alloc_percpu(size_t size, size_t align);

/*
 * A multi-instance CPU hotplug state: cpuhp_setup_state_multi() is an inline wrapper that casts the callbacks
 * (the instance functions the glue calls directly). Returns 0 for a fixed state, the state for a dynamic one,
 * or a negative errno (-EBUSY while another owner holds the state).
 */
int rpmu_cpuhp_setup_state_multi(int state, const char *name,
				 int (*startup)(unsigned int cpu, struct hlist_node *node),
				 int (*teardown)(unsigned int cpu, struct hlist_node *node));

/*
 * debugfs: a directory of read-only files whose contents the show callback writes with seq_write().
 * DEFINE_SHOW_ATTRIBUTE() and the file operations are macros and static structures. Returns the directory
 * (never NULL; an error pointer when debugfs is not available, which debugfs_remove() accepts).
 */
struct seq_file;
struct dentry;
/*
 * One file of a debugfs directory: its name, the show callback, its data and the file's index (passed to the
 * callback). The caller keeps the array until the directory is removed.
 */
struct rpmu_debugfs_file {
	const char *name;
	int (*show)(struct seq_file *m, void *data, unsigned int index);
	void *data;
	unsigned int index;
};
struct dentry *rpmu_debugfs_create(const char *dir, struct rpmu_debugfs_file *files, unsigned int n);

/* Runs func(info) on every online CPU with interrupts disabled and waits for all of them. Process context only. */
void rpmu_on_each_cpu(void (*func)(void *info), void *info);

/* Initialises a work item and queues it on the system workqueue: INIT_WORK() is a macro, schedule_work() inline. */
struct work_struct;
void rpmu_queue_work(struct work_struct *work, void (*func)(struct work_struct *work));

/*
 * Per-CPU interrupts. irq_find_matching_fwnode(), irq_create_mapping() and request_percpu_irq() are inline.
 * rpmu_irq_create_mapping() maps hwirq of the interrupt domain of fwnode (0 if there is none).
 * rpmu_request_percpu_irq() requests irq with handler, called on the interrupted CPU with that CPU's copy of
 * the per-CPU cookie, which points to data on every CPU; it returns 0 and the cookie, or a negative errno. The
 * interrupt is freed with free_percpu_irq(irq, cookie), then the cookie with free_percpu().
 */
struct fwnode_handle;
unsigned int rpmu_irq_create_mapping(struct fwnode_handle *fwnode, unsigned long hwirq);
int rpmu_request_percpu_irq(unsigned int irq, const char *name, irq_handler_t handler, void *data,
			    void __percpu **cookie);

/* The physical address of kmalloc'd memory lent to firmware: virt_to_phys() is a macro. */
u64 rpmu_virt_to_phys(void *ptr);

/* local_irq_save(), local_irq_restore() and lockdep_assert_irqs_disabled() are macros. */
unsigned long rpmu_local_irq_save(void);
void rpmu_local_irq_restore(unsigned long flags);
void rpmu_lockdep_assert_irqs_disabled(void);

/* WARN_ONCE() is a macro. */
void rpmu_warn_once(const char *msg);

/*
 * Reports a counter overflow of a sampling event from the overflow interrupt: perf_sample_data_init() and
 * get_irq_regs() are inline. Returns perf_event_overflow()'s result: nonzero when perf core throttles the event.
 */
int rpmu_event_overflow(struct perf_event *event, u64 last_period);

/* CPU PM notifiers; without CONFIG_CPU_PM the registration functions are inline stubs. */
struct notifier_block;
int rpmu_cpu_pm_register_notifier(struct notifier_block *nb);
void rpmu_cpu_pm_unregister_notifier(struct notifier_block *nb);

/* The module parameter counter_delegation (params.c). */
bool rpmu_counter_delegation(void);

#endif /* RPMU_HELPERS_H */
