// SPDX-License-Identifier: GPL-2.0

//! An integer sysctl in `/proc/sys/kernel/`, bounded, with a hook that runs when a write changes it.
//!
//! C header: [`include/linux/sysctl.h`](srctree/include/linux/sysctl.h)

use super::bindings;
use super::compat::{self, pin_init_from_closure};
use core::{
    marker::PhantomData,
    ptr::{self, addr_of, addr_of_mut, NonNull},
    sync::atomic::{AtomicI32, Ordering},
};
use kernel::{
    c_str,
    ffi::{c_int, c_void},
    prelude::*,
    types::Opaque,
};

/// An integer sysctl under `kernel.` (`proc_dointvec_minmax()`), its value kept in a static.
///
/// # Examples
///
/// ```ignore
/// static USER_ACCESS: AtomicI32 = AtomicI32::new(1);
///
/// struct UserAccess;
///
/// impl IntSysctl for UserAccess {
///     const NAME: &'static CStr = c_str!("perf_user_access");
///     const MIN: i32 = 0;
///     const MAX: i32 = 2;
///
///     fn value() -> &'static AtomicI32 {
///         &USER_ACCESS
///     }
///
///     fn changed(_old: i32, _new: i32) {}
/// }
/// ```
pub(crate) trait IntSysctl: 'static {
    /// The name in `/proc/sys/kernel/`.
    const NAME: &'static CStr;

    /// The smallest value a write may set.
    const MIN: i32;

    /// The largest value a write may set.
    const MAX: i32;

    /// The value. Writes through `/proc` store it; code reads it with atomic loads.
    fn value() -> &'static AtomicI32;

    /// Runs in the writing task after a write changed the value from `old` to `new`.
    fn changed(old: i32, new: i32);
}

/// A registered [`IntSysctl`], unregistered on drop.
///
/// # Invariants
///
/// `header` is the header `register_sysctl_sz()` returned for `table`, not unregistered yet.
///
/// # Examples
///
/// ```ignore
/// let sysctl = KBox::pin_init(sysctl::Registration::<UserAccess>::new(), GFP_KERNEL)?;
/// ```
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: IntSysctl> {
    /// The table, which the sysctl core keeps a pointer to until it is unregistered, so it is
    /// pinned.
    #[pin]
    table: Opaque<bindings::ctl_table>,
    header: NonNull<bindings::ctl_table_header>,
    _p: PhantomData<T>,
}

// SAFETY: The registration holds no thread-bound state; the table is only read by the sysctl core.
unsafe impl<T: IntSysctl> Send for Registration<T> {}

// SAFETY: Shared references give no access to the table or the header.
unsafe impl<T: IntSysctl> Sync for Registration<T> {}

impl<T: IntSysctl> Registration<T> {
    /// Creates `/proc/sys/kernel/<T::NAME>`, mode 0644.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| {
            // SAFETY: `slot` is valid for writes; the table is written before anything reads it.
            let table = compat::opaque_ptr(unsafe { addr_of!((*slot).table) });
            // The bounds `extra1` and `extra2` point to: constants, which `proc_dointvec_minmax()`
            // only reads.
            let bounds: &'static [c_int; 2] = const { &[T::MIN, T::MAX] };
            let value = bindings::ctl_table {
                procname: T::NAME.as_char_ptr(),
                data: T::value().as_ptr().cast::<c_void>(),
                // CAST: The size of an `int` fits an `int`.
                maxlen: core::mem::size_of::<c_int>() as c_int,
                mode: 0o644,
                proc_handler: Some(Self::handler),
                // CAST: The sysctl core never writes through the bounds.
                extra1: ptr::from_ref(&bounds[0]).cast_mut().cast::<c_void>(),
                extra2: ptr::from_ref(&bounds[1]).cast_mut().cast::<c_void>(),
                ..Default::default()
            };
            // SAFETY: `table` is valid for writes.
            unsafe { table.write(value) };
            // SAFETY: The path is a static string; `table` is one valid entry that stays pinned
            // until `drop` unregisters it.
            let header =
                unsafe { bindings::register_sysctl_sz(c_str!("kernel").as_char_ptr(), table, 1) };
            let header = NonNull::new(header).ok_or(ENOMEM)?;
            // SAFETY: `slot` is valid for writes.
            unsafe { addr_of_mut!((*slot).header).write(header) };
            // SAFETY: `slot` is valid for writes.
            unsafe { addr_of_mut!((*slot)._p).write(PhantomData) };
            // INVARIANT: `header` is the registration of `table`.
            Ok(())
        };
        // SAFETY: On success every field is initialised; on failure nothing was registered and no
        // field needs dropping.
        unsafe { pin_init_from_closure(init) }
    }

    /// `proc_handler`: `proc_dointvec_minmax()`, then [`IntSysctl::changed`] when the value changed.
    ///
    /// # Safety
    ///
    /// The arguments must be those the sysctl core passes to a `proc_handler` of this table.
    unsafe extern "C" fn handler(
        table: *const bindings::ctl_table,
        write: c_int,
        buffer: *mut c_void,
        lenp: *mut usize,
        ppos: *mut bindings::loff_t,
    ) -> c_int {
        let old = T::value().load(Ordering::Relaxed);
        // SAFETY: The arguments are those of this handler, as the caller guarantees; the table's
        // `data` is the `int` of `T::value()` and its bounds are `int`s.
        let ret = unsafe { bindings::proc_dointvec_minmax(table, write, buffer, lenp, ppos) };
        let new = T::value().load(Ordering::Relaxed);
        if ret == 0 && write != 0 && new != old {
            T::changed(old, new);
        }
        ret
    }
}

#[pinned_drop]
impl<T: IntSysctl> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `header` is registered; unregistering waits for running
        // handlers, so the table and its bounds outlive every use.
        unsafe { bindings::unregister_sysctl_table(self.header.as_ptr()) };
    }
}
