// SPDX-License-Identifier: GPL-2.0

//! A debugfs directory with one read-only file whose contents the driver writes on each read.
//!
//! C header: [`include/linux/debugfs.h`](srctree/include/linux/debugfs.h)

use super::bindings;
use core::marker::PhantomData;
use kernel::{error::from_result, ffi::c_int, ffi::c_void, prelude::*};

/// What a debugfs file shows.
pub(crate) trait Show: Send + Sync + 'static {
    /// Writes the file's contents. Runs in process context and may sleep.
    fn show(&self, out: &mut SeqFile<'_>) -> Result;
}

/// The output buffer of a debugfs read (`struct seq_file`).
///
/// # Invariants
///
/// `m` is the `seq_file` of a running `show` callback.
pub(crate) struct SeqFile<'a> {
    m: *mut bindings::seq_file,
    _p: PhantomData<&'a mut bindings::seq_file>,
}

impl SeqFile<'_> {
    /// Appends `s` (`seq_puts()`).
    pub(crate) fn puts(&mut self, s: &CStr) {
        // SAFETY: By the type invariant `m` is valid; `s` is a NUL-terminated string.
        unsafe { bindings::rpmu_seq_puts(self.m, s.as_char_ptr()) };
    }
}

/// The debugfs directory `dir` with the file `file` showing `T`, removed on drop.
///
/// # Invariants
///
/// `dir` was returned by `rpmu_debugfs_create()` for `file`, whose `data` points to `data`; both
/// are on the heap, so their addresses do not change, and `dir` is removed before they are freed.
pub(crate) struct Registration<T: Show> {
    dir: *mut bindings::dentry,
    file: KBox<bindings::rpmu_debugfs_file>,
    data: KBox<T>,
}

// SAFETY: The directory pointer is only passed back to debugfs, which may be called from any
// thread; `T` is `Send`.
unsafe impl<T: Show> Send for Registration<T> {}

// SAFETY: Shared references give no access to the directory; `T` is `Sync`.
unsafe impl<T: Show> Sync for Registration<T> {}

impl<T: Show> Registration<T> {
    /// Creates `/sys/kernel/debug/<dir>/<file>`, whose reads call `data.show()`.
    pub(crate) fn new(dir: &'static CStr, file: &'static CStr, data: T) -> Result<Self> {
        let data = KBox::new(data, GFP_KERNEL)?;
        let ptr: *const T = &*data;
        let mut file_ops = KBox::new(
            bindings::rpmu_debugfs_file {
                show: Some(Self::show_callback),
                data: ptr.cast_mut().cast::<c_void>(),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: The names are static strings; `file_ops` and the data it points to stay valid
        // until `drop` has removed the directory, after which debugfs no longer calls
        // `show_callback`. Each registration has its own `file_ops`.
        let dir = unsafe {
            bindings::rpmu_debugfs_create(dir.as_char_ptr(), file.as_char_ptr(), &mut *file_ops)
        };
        // INVARIANT: `dir` was created for `file_ops`, which points to `data`; both are boxed.
        Ok(Self {
            dir,
            file: file_ops,
            data,
        })
    }

    /// # Safety
    ///
    /// `m` must be the `seq_file` of a read of the file created by [`Registration::new`], and
    /// `data` the pointer given there.
    unsafe extern "C" fn show_callback(m: *mut bindings::seq_file, data: *mut c_void) -> c_int {
        from_result(|| {
            // SAFETY: The caller guarantees that `data` is the `T` of a live registration.
            let data = unsafe { &*data.cast::<T>() };
            // INVARIANT: `m` is the `seq_file` of this running callback.
            let mut out = SeqFile { m, _p: PhantomData };
            data.show(&mut out)?;
            Ok(0)
        })
    }
}

impl<T: Show> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `dir` came from `rpmu_debugfs_create()`. debugfs_remove()
        // waits for running callbacks, so `data` is unused once it returns.
        unsafe { bindings::rpmu_debugfs_remove(self.dir) };
        // The callback data is freed after the directory is gone.
        let _ = (&self.file, &self.data);
    }
}
