# riscv_pmu_sbi_rust: entry points. Everything is built by the scripts under scripts/; artifacts that take long
# to build (the test kernel, the guest root filesystem) are cached in $(RPMU_CACHE), outside the clone.
#
#   make run        boot a RISC-V QEMU machine with the driver loaded and show perf counting and sampling
#   make test       every test: host tests, module build checks, then the QEMU harness on both drivers, on
#                   Linux 6.12 and on the 7.3 entries (their short version: see tests/harness/matrix.py)
#   make test-full  make test without its short version: every test on every entry, every entry on both kernels
#   make test-kvm   every guest check in the kvm and 7.3-kvm entries, with KVM's selftest in the L1 guest (make
#                   test runs a subset there: nested guests are slow)
#   make bench      both drivers side by side on the bench kernels of Linux 6.12 and 7.3 (the test kernels
#                   without their debug options), each kernel's Rust driver against its own C driver: a table of
#                   costs, CSV and a chart in $(RPMU_CACHE)/bench, the tables in
#                   Documentation/driver-api/perf/riscv_pmu_sbi_rust-bench.rst and the README's summary; never
#                   part of make test
#   make stress     both drivers on the stress kernel (kmemleak): 100,000 fuzzed perf_event_attrs, 1,000 CPU
#                   hotplug cycles under perf, 100 module reloads, sampling storms; never part of make test
#   make module     build riscv_pmu_sbi_rust.ko against the test kernel
#   make host-test  the sbi_pmu crate and firmware model tests (cargo), the harness and qemu-run unit tests
#   make kernel     build the test kernels (6.12, 7.3)  make rootfs   build the guest root filesystem
#   make deps       install the dependencies     make clean    remove build products from the clone
#   make distclean  also remove the cache

SHELL := /bin/bash
export RPMU_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/riscv_pmu_sbi_rust
HARNESS_DRIVERS ?= $(if $(wildcard scripts/module-build),c$(comma)rust,c)
# Two boots at a time: the C and Rust drivers of one matrix entry run side by side, under the same load.
HARNESS_JOBS ?= 2
HARNESS_ARGS ?=
# For example BENCH_ARGS=--quick: fewer iterations, to try the pipeline; BENCH_ARGS="--kernel 7.3": one kernel.
BENCH_ARGS ?=
# For example STRESS_ARGS="--fuzz 5000 --hotplug 50 --reloads 5": a shorter run; --kasan: the kernel with KASAN
# too (tests/stress/stress.py --help).
STRESS_ARGS ?=
comma := ,

.PHONY: run test test-full test-kvm bench stress module host-test deps kernel rootfs harness clean distclean

run:
	scripts/demo $(if $(DRIVER),--driver $(DRIVER))

deps:
	scripts/setup-deps

kernel: deps
	scripts/build-kernel
	scripts/build-kernel --kernel 7.3

rootfs: kernel
	scripts/build-rootfs

host-test: deps
	scripts/host-test

module: kernel
	scripts/module-build

harness: rootfs
	tests/harness/harness.py --drivers $(HARNESS_DRIVERS) --jobs $(HARNESS_JOBS) $(HARNESS_ARGS)

test: deps
	@echo "[test] 1/3 host tests"
	scripts/host-test
	@if [ -x scripts/module-build ]; then \
	  echo "[test] 2/3 module build on Linux 6.12 and 7.3 (warnings, clippy, rustfmt)"; \
	  scripts/module-build --check-all; \
	  scripts/module-build --kernel 7.3 --check-all; \
	else echo "[test] 2/3 module build: no module in this tree yet"; fi
	@echo "[test] 3/3 QEMU harness, drivers: $(HARNESS_DRIVERS)"
	@$(MAKE) --no-print-directory harness

test-full:
	@$(MAKE) --no-print-directory test HARNESS_ARGS="--full all $(HARNESS_ARGS)"

test-kvm: deps rootfs
	tests/harness/harness.py --drivers $(HARNESS_DRIVERS) --jobs $(HARNESS_JOBS) --entries kvm,7.3-kvm \
	  --suites checks --full kvm,7.3-kvm $(HARNESS_ARGS)

bench: deps
	tests/bench/bench.py $(BENCH_ARGS)

stress: deps
	tests/stress/stress.py $(STRESS_ARGS)

clean:
	rm -rf target
	find drivers -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' -o -name '.*.cmd' \
	  -o -name '*.rmeta' -o -name 'modules.order' -o -name 'Module.symvers' | xargs rm -f

distclean: clean
	rm -rf "$(RPMU_CACHE)"
