// SPDX-License-Identifier: GPL-2.0

//! Static sysfs attribute groups of a PMU, such as its `format/` and `events/` directories.
//!
//! C header: [`include/linux/sysfs.h`](srctree/include/linux/sysfs.h)
//!
//! The groups are built at compile time in `static`s, as `PMU_FORMAT_ATTR()` does in C:
//!
//! ```ignore
//! static FORMAT_ATTRS: [FormatAttr; 1] = [FormatAttr::new(c_str!("event"), c_str!("config:0-47"))];
//! static FORMAT_LIST: Attributes<1> = Attributes::new(&FORMAT_ATTRS);
//! static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_LIST);
//! static ATTR_GROUPS: AttributeGroups<1> = AttributeGroups::new([&FORMAT_GROUP]);
//! ```
//!
//! An `events/` directory whose entries depend on the hardware (`PMU_EVENT_ATTR_ID()` with an
//! `is_visible` callback in C) is built the same way from [`PmuEventAttr`]s and
//! [`AttributeGroup::with_events`]; an [`EventList`] says which events are listed and what each
//! file reads.
//!
//! Attributes in static memory need no `sysfs_attr_init()`: lockdep accepts their embedded key.

use super::bindings;
use super::compat;
use core::{marker::PhantomData, mem, ptr};
use kernel::{
    c_str,
    ffi::{c_char, c_int},
    prelude::*,
    types::Opaque,
};

/// What the file of a [`PmuAttr`] reads: a fixed string (`&'static CStr`) or the `event=` value of
/// an event ([`EventId`]).
pub(crate) trait AttrValue: Sync + 'static {
    /// Writes the file's contents to `buf` with `sysfs_emit()` and returns their length.
    ///
    /// # Safety
    ///
    /// `buf` must be the page-sized buffer sysfs passes to a `show` callback.
    unsafe fn emit(&self, buf: *mut c_char) -> c_int;
}

/// A fixed string, followed by a newline, like the value of a `PMU_FORMAT_ATTR()`.
impl AttrValue for &'static CStr {
    unsafe fn emit(&self, buf: *mut c_char) -> c_int {
        // SAFETY: `buf` is a sysfs page buffer (guaranteed by the caller), the format takes one
        // string argument and `self` is NUL-terminated.
        unsafe { bindings::sysfs_emit(buf, c_str!("%s\n").as_char_ptr(), self.as_char_ptr()) }
    }
}

/// The events of an `events/` directory, numbered from 0 in the order of their
/// [`PmuEventAttr`]s: which of them the hardware has, and the `event=` value of each.
///
/// # Examples
///
/// ```ignore
/// struct Events;
///
/// impl EventList for Events {
///     fn listed(id: usize) -> bool {
///         id == 0
///     }
///     fn config(_id: usize) -> u64 {
///         0x1
///     }
/// }
/// ```
pub(crate) trait EventList: Sync + 'static {
    /// Whether event `id` is listed; without any listed event there is no `events/` directory.
    fn listed(id: usize) -> bool;
    /// The `event=` value of event `id` (the `config` bits its format names).
    fn config(id: usize) -> u64;
}

/// Event `id` of the [`EventList`] `T`, whose file reads `event=0x...` like a `PMU_EVENT_ATTR_ID()`
/// whose show callback prints its id.
pub(crate) struct EventId<T>(usize, PhantomData<T>);

impl<T> EventId<T> {
    /// Event `id` of `T`.
    pub(crate) const fn new(id: usize) -> Self {
        Self(id, PhantomData)
    }
}

impl<T: EventList> AttrValue for EventId<T> {
    unsafe fn emit(&self, buf: *mut c_char) -> c_int {
        let config = T::config(self.0);
        // SAFETY: `buf` is a sysfs page buffer (guaranteed by the caller) and the format takes one
        // `unsigned long long`.
        unsafe { bindings::sysfs_emit(buf, c_str!("event=0x%llx\n").as_char_ptr(), config) }
    }
}

/// A read-only attribute whose file shows `value`.
///
/// # Invariants
///
/// `attr` is a valid `struct device_attribute` with mode 0444, `show` set to [`PmuAttr::show`]
/// and no `store`; it is the first field, so a pointer to it is a pointer to the whole `PmuAttr`.
///
/// # Examples
///
/// ```ignore
/// static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
/// static EVENT_ATTRS: [PmuEventAttr<Events>; 1] =
///     [PmuEventAttr::new(c_str!("cpu-cycles"), EventId::new(0))];
/// ```
#[repr(C)]
pub(crate) struct PmuAttr<V: AttrValue> {
    attr: Opaque<bindings::device_attribute>,
    value: V,
}

/// An attribute of a `format/` directory (`PMU_FORMAT_ATTR()`).
pub(crate) type FormatAttr = PmuAttr<&'static CStr>;

/// An attribute of an `events/` directory (`PMU_EVENT_ATTR_ID()`).
pub(crate) type PmuEventAttr<T> = PmuAttr<EventId<T>>;

// SAFETY: sysfs only reads the attribute, and `value` is `Sync` and never written after
// construction.
unsafe impl<V: AttrValue> Sync for PmuAttr<V> {}

impl<V: AttrValue> PmuAttr<V> {
    /// Creates the attribute `name`, whose file shows `value`.
    pub(crate) const fn new(name: &'static CStr, value: V) -> Self {
        // SAFETY: All-zero is a valid `device_attribute`: null pointers, no callbacks, and a lockdep
        // key that lockdep initialises itself for static objects.
        let mut attr: bindings::device_attribute = unsafe { mem::zeroed() };
        attr.attr.name = compat::const_char_ptr(name);
        attr.attr.mode = 0o444;
        compat::on_kernel!(
            attr.show = Some(Self::show),
            attr.__bindgen_anon_1.show = Some(Self::show),
        );
        // INVARIANT: The attribute is read-only and shows `value`.
        Self {
            attr: Opaque::new(attr),
            value,
        }
    }

    /// # Safety
    ///
    /// `attr` must be passed by sysfs to the `show` callback of a [`PmuAttr<V>`], and `buf` must be
    /// its page-sized buffer.
    unsafe extern "C" fn show(
        _dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // CAST: By the type invariant `attr` is the first field of a `PmuAttr<V>`.
        let this = attr.cast::<Self>();
        // SAFETY: `this` points to a `PmuAttr<V>` in static memory, and `buf` is the sysfs page
        // buffer of this callback.
        let len = unsafe { (*this).value.emit(buf) };
        len as isize
    }
}

/// A NULL-terminated array of `N` attributes showing `V`s, as `struct attribute_group::attrs` wants
/// it: format attributes, or the events of an [`EventList`].
///
/// # Invariants
///
/// `list` holds pointers to `'static` attributes and `end` is null, right after them (`repr(C)`);
/// with [`EventId`]s, entry `i` is event `i`.
///
/// # Examples
///
/// ```ignore
/// static FORMAT_ATTRS: [FormatAttr; 1] = [FormatAttr::new(c_str!("event"), c_str!("config:0-47"))];
/// static FORMAT_LIST: Attributes<1> = Attributes::new(&FORMAT_ATTRS);
/// ```
#[repr(C)]
pub(crate) struct Attributes<const N: usize, V = &'static CStr> {
    list: [*mut bindings::attribute; N],
    end: *mut bindings::attribute,
    _value: PhantomData<V>,
}

// SAFETY: The pointers refer to `Sync` statics and are never written after construction.
unsafe impl<const N: usize, V> Sync for Attributes<N, V> {}

impl<const N: usize, V: AttrValue> Attributes<N, V> {
    /// Collects `attrs` into a NULL-terminated array, `attrs[i]` at index `i`.
    pub(crate) const fn new(attrs: &'static [PmuAttr<V>; N]) -> Self {
        let mut list = [ptr::null_mut(); N];
        let mut i = 0;
        while i < N {
            // CAST: `attr` is the first field of `struct device_attribute`.
            list[i] = attrs[i].attr.get().cast::<bindings::attribute>();
            i += 1;
        }
        // INVARIANT: Every entry points to a static attribute and the array is NULL-terminated;
        // entry `i` is `attrs[i]`, event `i` of an events list.
        Self {
            list,
            end: ptr::null_mut(),
            _value: PhantomData,
        }
    }
}

/// A named attribute group: a directory of attributes under the PMU's sysfs directory.
///
/// # Invariants
///
/// `group` is a valid `struct attribute_group` whose `attrs` is a NULL-terminated array of
/// static attributes.
///
/// # Examples
///
/// ```ignore
/// static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_LIST);
/// static EVENTS_GROUP: AttributeGroup = AttributeGroup::with_events(c_str!("events"), &EVENT_LIST);
/// ```
#[repr(transparent)]
pub(crate) struct AttributeGroup {
    group: Opaque<bindings::attribute_group>,
}

// SAFETY: sysfs only reads the group, which refers to `Sync` statics only.
unsafe impl Sync for AttributeGroup {}

impl AttributeGroup {
    /// Creates the group `name` with the attributes `attrs`.
    pub(crate) const fn new<const N: usize>(
        name: &'static CStr,
        attrs: &'static Attributes<N>,
    ) -> Self {
        // INVARIANT: `Attributes` is NULL-terminated and refers to static attributes.
        Self {
            group: Opaque::new(Self::raw(name, attrs)),
        }
    }

    /// Creates the group `name` listing the events of `T` that [`EventList::listed`] says exist
    /// when the group is created; without any, the directory is not created at all.
    pub(crate) const fn with_events<T: EventList, const N: usize>(
        name: &'static CStr,
        attrs: &'static Attributes<N, EventId<T>>,
    ) -> Self {
        let mut group = Self::raw(name, attrs);
        compat::on_kernel!(
            group.is_visible = Some(Self::event_is_visible::<T, N>),
            group.__bindgen_anon_1.is_visible = Some(Self::event_is_visible::<T, N>),
        );
        // INVARIANT: As in `new`.
        Self {
            group: Opaque::new(group),
        }
    }

    const fn raw<const N: usize, V>(
        name: &'static CStr,
        attrs: &'static Attributes<N, V>,
    ) -> bindings::attribute_group {
        // SAFETY: All-zero is a valid `attribute_group`: null pointers and no callbacks.
        let mut group: bindings::attribute_group = unsafe { mem::zeroed() };
        group.name = compat::const_char_ptr(name);
        // CAST: sysfs never writes through `attrs`; the C type is not `const` only by history.
        let list = ptr::addr_of!(attrs.list)
            .cast::<*mut bindings::attribute>()
            .cast_mut();
        compat::on_kernel!(group.attrs = list, group.__bindgen_anon_2.attrs = list);
        group
    }

    /// The `is_visible` callback of an events group: attribute `n` is event `n`.
    ///
    /// # Safety
    ///
    /// `attr` must be an attribute of a group made by [`AttributeGroup::with_events`] for `T` and
    /// `N` events, passed by sysfs with its index `n`.
    unsafe extern "C" fn event_is_visible<T: EventList, const N: usize>(
        _kobj: *mut bindings::kobject,
        attr: *mut bindings::attribute,
        n: c_int,
    ) -> bindings::umode_t {
        // sysfs asks about the first attribute once for the directory itself too: the whole
        // group is hidden when no event is listed.
        if n == 0 && !(0..N).any(T::listed) {
            // CAST: The flag fits `umode_t`, whose file mode bits sysfs masks it from.
            return bindings::SYSFS_GROUP_INVISIBLE as bindings::umode_t;
        }
        match usize::try_from(n) {
            // SAFETY: sysfs passes a valid attribute of the group.
            Ok(id) if T::listed(id) => unsafe { (*attr).mode },
            _ => 0,
        }
    }
}

/// A NULL-terminated array of `N` attribute groups, as `struct pmu::attr_groups` wants it.
///
/// # Invariants
///
/// `list` holds pointers to `'static` groups and `end` is null, right after them (`repr(C)`).
///
/// # Examples
///
/// ```ignore
/// static GROUPS: AttributeGroups<2> = AttributeGroups::new([&FORMAT_GROUP, &EVENTS_GROUP]);
/// ```
#[repr(C)]
pub(crate) struct AttributeGroups<const N: usize> {
    list: [*const bindings::attribute_group; N],
    end: *const bindings::attribute_group,
}

// SAFETY: The pointers refer to `Sync` statics and are never written after construction.
unsafe impl<const N: usize> Sync for AttributeGroups<N> {}

impl<const N: usize> AttributeGroups<N> {
    /// Collects `groups` into a NULL-terminated array.
    pub(crate) const fn new(groups: [&'static AttributeGroup; N]) -> Self {
        let mut list = [ptr::null(); N];
        let mut i = 0;
        while i < N {
            list[i] = groups[i].group.get().cast_const();
            i += 1;
        }
        // INVARIANT: Every entry points to a static group and the array is NULL-terminated.
        Self {
            list,
            end: ptr::null(),
        }
    }

    /// The array as `struct pmu::attr_groups` takes it.
    pub(crate) fn as_raw(&'static self) -> *mut *const bindings::attribute_group {
        // CAST: perf core and sysfs never write through `attr_groups`.
        ptr::addr_of!(self.list)
            .cast::<*const bindings::attribute_group>()
            .cast_mut()
    }
}
