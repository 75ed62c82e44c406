// SPDX-License-Identifier: GPL-2.0

//! Device tree nodes and their properties.
//!
//! C header: [`include/linux/of.h`](srctree/include/linux/of.h)
//!
//! `of_property_count_u32_elems()` and `of_property_read_u32_array()` are static inlines over
//! `of_property_count_elems_of_size()` and `of_property_read_variable_u32_array()`; the former logs
//! an error of its own for a length that is not a whole number of cells, so the length is taken
//! from `of_find_property()` instead and the caller decides what to say about it.

use super::bindings;
use core::ptr::{self, NonNull};
use kernel::{error::to_result, ffi::c_int, prelude::*};

/// A device tree node, with a reference held on it.
///
/// # Invariants
///
/// `node` points to a valid `struct device_node` on which this object holds one reference, dropped
/// with `of_node_put()` (a no-op without `CONFIG_OF_DYNAMIC`, where nodes are never freed).
///
/// # Examples
///
/// ```ignore
/// let name = c_str!("riscv,event-to-mhpmcounters");
/// if let Some(node) = OfNode::find_compatible(c_str!("riscv,pmu")) {
///     if let Some(len) = node.property_len(name) {
///         let cells = node.read_u32_array(name, len / 4)?;
///     }
/// }
/// ```
pub(crate) struct OfNode {
    node: NonNull<bindings::device_node>,
}

impl OfNode {
    /// The first node whose `compatible` property lists `compatible`, like
    /// `of_find_compatible_node(NULL, NULL, compatible)`.
    pub(crate) fn find_compatible(compatible: &CStr) -> Option<Self> {
        // SAFETY: A null `from` searches the whole tree and puts no reference; a null `type`
        // matches any type; `compatible` is NUL-terminated and outlives the call, which takes
        // `devtree_lock` itself.
        let node = unsafe {
            bindings::of_find_compatible_node(
                ptr::null_mut(),
                ptr::null(),
                compatible.as_char_ptr(),
            )
        };
        // INVARIANT: A non-null result comes with a reference taken for the caller.
        NonNull::new(node).map(|node| Self { node })
    }

    /// The length in bytes of property `name`, or `None` when the node has no such property.
    pub(crate) fn property_len(&self, name: &CStr) -> Option<usize> {
        let mut len: c_int = 0;
        // SAFETY: `self.node` is valid by the type invariant; `name` is NUL-terminated and `len`
        // writable for the call, which takes `devtree_lock` itself.
        let prop =
            unsafe { bindings::of_find_property(self.node.as_ptr(), name.as_char_ptr(), &mut len) };
        // A present property has a non-negative length.
        (!prop.is_null()).then(|| usize::try_from(len).unwrap_or(0))
    }

    /// The `n` cells of the `u32` array property `name` in CPU order
    /// (`of_property_read_u32_array()`); `Err` when the node has no such property or it does not
    /// hold `n` cells ([`OfNode::property_len`] says how many it holds).
    pub(crate) fn read_u32_array(&self, name: &CStr, n: usize) -> Result<KVec<u32>> {
        let mut cells = KVec::from_elem(0, n, GFP_KERNEL)?;
        if n == 0 {
            return Ok(cells);
        }
        // SAFETY: `self.node` is valid by the type invariant and `name` is NUL-terminated. `cells`
        // holds `n` values and the call writes at most `sz_max` = `n` of them; it finds the
        // property under `devtree_lock` and copies it out.
        let read = unsafe {
            bindings::of_property_read_variable_u32_array(
                self.node.as_ptr(),
                name.as_char_ptr(),
                cells.as_mut_ptr(),
                n,
                n,
            )
        };
        // With `sz_min` = `sz_max` = `n`, a call that succeeds wrote all `n` values.
        to_result(read).map(|()| cells)
    }

    /// The node of a possible CPU (`of_get_cpu_node(cpu, NULL)`), if the device tree has one.
    pub(crate) fn cpu(cpu: super::percpu::CpuId) -> Option<Self> {
        // SAFETY: Any CPU number is accepted; a null `thread` asks for no thread index.
        let node = unsafe { bindings::of_get_cpu_node(cpu.as_c_int(), ptr::null_mut()) };
        // INVARIANT: A non-null result comes with a reference taken for the caller.
        NonNull::new(node).map(|node| Self { node })
    }

    /// Whether the string list property `name` holds `value` (`of_property_match_string()`).
    pub(crate) fn has_string(&self, name: &CStr, value: &CStr) -> bool {
        // SAFETY: `self.node` is valid by the type invariant; `name` and `value` are
        // NUL-terminated and outlive the call, which takes `devtree_lock` itself.
        let index = unsafe {
            bindings::of_property_match_string(
                self.node.as_ptr(),
                name.as_char_ptr(),
                value.as_char_ptr(),
            )
        };
        index >= 0
    }
}

impl Drop for OfNode {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this object holds one reference on the node, given back
        // here once.
        unsafe { bindings::rpmu_of_node_put(self.node.as_ptr()) };
    }
}

/// Whether the device tree's root node lists `compatible` (`of_machine_is_compatible()`).
pub(crate) fn machine_is_compatible(compatible: &CStr) -> bool {
    let compats = [compatible.as_char_ptr(), ptr::null()];
    // SAFETY: `compats` is a NULL-terminated array of NUL-terminated strings that outlives the
    // call.
    unsafe { bindings::of_machine_compatible_match(compats.as_ptr()) }
}
