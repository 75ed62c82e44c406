//! A model of an SBI PMU implementation, faithful to the SBI specification, for host tests of the
//! `sbi_pmu` crate.
