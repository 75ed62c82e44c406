/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Header the module-local bindgen rule (see Kbuild) turns into glue/bindings_generated.rs.
 *
 * The 6.12 kernel crate's bindings do not include perf_event.h and the other headers a PMU driver needs, so the
 * module generates its own, with the kernel's bindgen flags, for an allowlisted set of items.
 */

#include <linux/cpu_pm.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/errno.h>
#include <linux/interrupt.h>
#include <linux/notifier.h>
#include <linux/irqdomain.h>
#include <linux/of.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/seq_file.h>
#include <linux/smp.h>
#include <linux/perf/riscv_pmu.h>
#include <linux/sysctl.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include <asm/cpufeature.h>
#include <asm/delay.h>
#include <asm/sbi.h>

#include "helpers.h"
