// SPDX-License-Identifier: GPL-2.0
/*
 * The module's parameters. The 6.12 Rust module! macro declares none, so they are declared here, in C, and read
 * by the Rust code through an accessor each.
 */

#include <linux/moduleparam.h>

#include "helpers.h"

static bool counter_delegation = true;
module_param(counter_delegation, bool, 0444);
MODULE_PARM_DESC(counter_delegation,
		 "Program delegated hardware counters with CSRs (Smcdeleg/Ssccfg) where the harts have counter delegation (default: on; off: every counter through SBI calls)");

bool rpmu_counter_delegation(void)
{
	return counter_delegation;
}
