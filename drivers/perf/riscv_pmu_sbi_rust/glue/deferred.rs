// SPDX-License-Identifier: GPL-2.0

//! A job that runs once on the system workqueue, whose result callers wait for.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)
//!
//! The 6.12 `kernel` crate can queue work items but not wait for one (`flush_work()`), which is
//! what a driver needs to start slow set-up at load without making the load wait, and to wait
//! for it where its result is first needed.

use super::bindings;
use super::compat;
use core::{
    cell::UnsafeCell,
    mem::MaybeUninit,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{prelude::*, types::Opaque};

/// Work to run once, in process context, on a CPU of the system workqueue's choosing.
///
/// # Examples
///
/// ```ignore
/// struct Probe;
///
/// impl Job for Probe {
///     type Output = u64;
///
///     fn run(&self) -> u64 {
///         42
///     }
/// }
/// ```
pub(crate) trait Job: Send + Sync + 'static {
    /// What the job computes.
    type Output: Send + Sync;

    /// Runs the job; it may sleep.
    fn run(&self) -> Self::Output;
}

/// A [`Job`] queued on the system workqueue when created; dropping it cancels it or waits for it.
///
/// # Invariants
///
/// `work` is initialised with [`Deferred::work_fn`] and was queued once. `output` is written only by
/// that call, before `done` is set (release); it is read only after `done` was seen set (acquire).
///
/// # Examples
///
/// ```ignore
/// let probe = KBox::pin_init(Deferred::new(Probe), GFP_KERNEL)?;
/// // Later, where the result is first needed:
/// let found = probe.wait().copied().unwrap_or(0);
/// ```
#[pin_data(PinnedDrop)]
pub(crate) struct Deferred<T: Job> {
    job: T,
    done: AtomicBool,
    output: UnsafeCell<MaybeUninit<T::Output>>,
    #[pin]
    work: Opaque<bindings::work_struct>,
}

// SAFETY: The job and its output are `Send`; the work item is only used through the workqueue API.
unsafe impl<T: Job> Send for Deferred<T> {}

// SAFETY: Shared references only read the output after it is complete (see the invariants), and
// `T` and `T::Output` are `Sync`.
unsafe impl<T: Job> Sync for Deferred<T> {}

impl<T: Job> Deferred<T> {
    /// Queues `job` on the system workqueue.
    pub(crate) fn new(job: T) -> impl PinInit<Self> {
        pin_init!(Self {
            job,
            done: AtomicBool::new(false),
            output: UnsafeCell::new(MaybeUninit::uninit()),
            // Initialised last, so the work function finds the other fields initialised.
            work <- Opaque::ffi_init(|work| {
                // SAFETY: `work` is valid for writes and pinned: the value does not move; once
                // queued it stays valid until drop cancels or waits for it.
                // INVARIANT: The item is initialised and queued once, here.
                unsafe { bindings::rpmu_queue_work(work, Some(Self::work_fn)) }
            }),
        })
    }

    /// The job's output, waiting for the job to finish first if it has not (`flush_work()`).
    /// Process context only, as it may sleep. `None` only if the job never ran, which the
    /// workqueue does not allow for a queued item.
    pub(crate) fn wait(&self) -> Option<&T::Output> {
        if !self.done.load(Ordering::Acquire) {
            // SAFETY: By the type invariant the work item is initialised and was queued.
            unsafe { bindings::flush_work(self.work.get()) };
        }
        // SAFETY: Once `done` is set, the output is written and never written again.
        self.done
            .load(Ordering::Acquire)
            .then(|| unsafe { (*self.output.get()).assume_init_ref() })
    }

    /// The work function.
    ///
    /// # Safety
    ///
    /// `work` must be the `work` field of a `Deferred<T>`, queued by [`Deferred::new`].
    unsafe extern "C" fn work_fn(work: *mut bindings::work_struct) {
        // CAST: `Opaque<work_struct>` is `repr(transparent)` over `work_struct`.
        let work = work.cast::<Opaque<bindings::work_struct>>();
        // SAFETY: Guaranteed by the caller.
        let this = unsafe { &*compat::container_of_mut!(work, Self, work) };
        let output = this.job.run();
        // SAFETY: This function runs once (the item is queued once) and nothing reads the output
        // before `done` is set below.
        unsafe { (*this.output.get()).write(output) };
        this.done.store(true, Ordering::Release);
    }
}

#[pinned_drop]
impl<T: Job> PinnedDrop for Deferred<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant the work item is initialised. Once this returns the work
        // function is neither queued nor running.
        unsafe { bindings::cancel_work_sync(self.work.get()) };
        if self.done.load(Ordering::Acquire) {
            // SAFETY: The output was written (`done`) and is dropped once, here.
            unsafe { (*self.output.get()).assume_init_drop() };
        }
    }
}
