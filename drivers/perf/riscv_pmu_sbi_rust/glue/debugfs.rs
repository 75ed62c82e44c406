// SPDX-License-Identifier: GPL-2.0

//! A debugfs directory of read-only files whose contents the driver writes on each read.
//!
//! C header: [`include/linux/debugfs.h`](srctree/include/linux/debugfs.h)

use super::bindings;
use core::marker::PhantomData;
use kernel::{
    error::from_result,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

/// What the files of a debugfs directory show.
///
/// # Examples
///
/// ```ignore
/// struct Stats;
///
/// impl Show for Stats {
///     const FILES: &'static [&'static CStr] = &[c_str!("calls")];
///
///     fn show(&self, _file: usize, out: &mut SeqFile<'_>) -> Result {
///         let _ = writeln!(out, "0");
///         Ok(())
///     }
/// }
/// ```
pub(crate) trait Show: Send + Sync + 'static {
    /// The names of the files, in the order of the `file` index of [`Show::show`].
    const FILES: &'static [&'static CStr];

    /// Writes the contents of the file `FILES[file]`. Runs in process context and may sleep.
    fn show(&self, file: usize, out: &mut SeqFile<'_>) -> Result;
}

/// The output buffer of a debugfs read (`struct seq_file`).
///
/// # Invariants
///
/// `m` is the `seq_file` of a running `show` callback.
///
/// # Examples
///
/// ```ignore
/// writeln!(out, "cpu calls")?;
/// ```
pub(crate) struct SeqFile<'a> {
    m: *mut bindings::seq_file,
    _p: PhantomData<&'a mut bindings::seq_file>,
}

/// Formatted output appended to the file (`seq_write()`). A full buffer is an error; seq_file notices
/// it too and reads again with a larger buffer, so `show` should still return `Ok`.
impl core::fmt::Write for SeqFile<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        // SAFETY: By the type invariant `m` is valid; `s` is valid for `s.len()` bytes.
        let ret = unsafe { bindings::seq_write(self.m, s.as_ptr().cast(), s.len()) };
        // `seq_write()` returns -1 when the buffer is full (and 0 when it wrote everything).
        (ret == 0).then_some(()).ok_or(core::fmt::Error)
    }
}

/// The debugfs directory `dir` with the files `T::FILES` showing `T`, removed on drop.
///
/// # Invariants
///
/// `dir` was returned by `rpmu_debugfs_create()` for `files`, whose entries' `data` point to
/// `data`; both are on the heap and never resized, so their addresses do not change, and `dir` is
/// removed before they are freed.
///
/// # Examples
///
/// ```ignore
/// let stats = debugfs::Registration::new(c_str!("riscv_pmu_sbi_rust"), Stats)?;
/// ```
pub(crate) struct Registration<T: Show> {
    dir: *mut bindings::dentry,
    files: KVec<bindings::rpmu_debugfs_file>,
    data: KBox<T>,
}

// SAFETY: The directory pointer is only passed back to debugfs, which may be called from any
// thread; `T` is `Send`.
unsafe impl<T: Show> Send for Registration<T> {}

// SAFETY: Shared references give no access to the directory; `T` is `Sync`.
unsafe impl<T: Show> Sync for Registration<T> {}

impl<T: Show> Registration<T> {
    /// Creates `/sys/kernel/debug/<dir>/` with one file per name of `T::FILES`, whose reads call
    /// `data.show()`.
    pub(crate) fn new(dir: &'static CStr, data: T) -> Result<Self> {
        let data = KBox::new(data, GFP_KERNEL)?;
        let ptr: *const T = &*data;
        let mut files = KVec::with_capacity(T::FILES.len(), GFP_KERNEL)?;
        for (index, name) in T::FILES.iter().enumerate() {
            files.push(
                bindings::rpmu_debugfs_file {
                    name: name.as_char_ptr(),
                    show: Some(Self::show_callback),
                    data: ptr.cast_mut().cast::<c_void>(),
                    index: c_uint::try_from(index)?,
                },
                GFP_KERNEL,
            )?;
        }
        let n = c_uint::try_from(files.len())?;
        let (name, list) = (dir.as_char_ptr(), files.as_mut_ptr());
        // The names are static strings; `files` and the data its entries point to stay valid, and
        // `files` is not resized, until `drop` has removed the directory, after which debugfs no
        // longer calls `show_callback`. Each registration has its own `files`.
        // SAFETY: As above: `list` points to `n` entries that outlive the directory.
        let dir = unsafe { bindings::rpmu_debugfs_create(name, list, n) };
        // INVARIANT: `dir` was created for `files`, whose entries point to `data`; both are on the
        // heap.
        Ok(Self { dir, files, data })
    }

    /// # Safety
    ///
    /// `m` must be the `seq_file` of a read of a file created by [`Registration::new`], `data`
    /// the pointer given there and `index` the file's index.
    unsafe extern "C" fn show_callback(
        m: *mut bindings::seq_file,
        data: *mut c_void,
        index: c_uint,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The caller guarantees that `data` is the `T` of a live registration.
            let data = unsafe { &*data.cast::<T>() };
            // INVARIANT: `m` is the `seq_file` of this running callback.
            let mut out = SeqFile { m, _p: PhantomData };
            data.show(usize::try_from(index)?, &mut out)?;
            Ok(0)
        })
    }
}

impl<T: Show> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `dir` came from `rpmu_debugfs_create()`. debugfs_remove()
        // waits for running callbacks, so `data` is unused once it returns.
        unsafe { bindings::debugfs_remove(self.dir) };
        // The callback data is freed after the directory is gone.
        let _ = (&self.files, &self.data);
    }
}
