// SPDX-License-Identifier: GPL-2.0

//! Static sysfs attribute groups of a PMU, such as its `format/` and `events/` directories.
//!
//! C header: [`include/linux/sysfs.h`](srctree/include/linux/sysfs.h)
//!
//! The groups are built at compile time in `static`s, as `PMU_FORMAT_ATTR()` does in C:
//!
//! ```ignore
//! static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
//! static FORMAT_ATTRS: Attributes<1> = Attributes::new([&FORMAT_EVENT]);
//! static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS);
//! static ATTR_GROUPS: AttributeGroups<1> = AttributeGroups::new([&FORMAT_GROUP]);
//! ```
//!
//! An `events/` directory whose entries depend on the hardware (`PMU_EVENT_ATTR_ID()` with an
//! `is_visible` callback in C) is built the same way from [`PmuEventAttr`]s, [`Attributes::events`]
//! and [`AttributeGroup::with_events`]; an [`EventList`] says which events are listed and what each
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

/// A read-only `struct device_attribute` named `name` whose file `show` writes.
const fn device_attr(
    name: &'static CStr,
    show: compat::ShowFn,
) -> Opaque<bindings::device_attribute> {
    // SAFETY: All-zero is a valid `device_attribute`: null pointers, no callbacks, and a lockdep
    // key that lockdep initialises itself for static objects.
    let mut attr: bindings::device_attribute = unsafe { mem::zeroed() };
    attr.attr.name = compat::const_char_ptr(name);
    attr.attr.mode = 0o444;
    compat::set_attr_show(&mut attr, show);
    Opaque::new(attr)
}

/// A read-only attribute whose file shows a fixed string, like `PMU_FORMAT_ATTR()`.
///
/// # Invariants
///
/// `attr` is a valid `struct device_attribute` with mode 0444, `show` set to
/// [`FormatAttr::show`] and no `store`; it is the first field, so a pointer to it is a pointer to
/// the whole `FormatAttr`.
///
/// # Examples
///
/// ```ignore
/// static FORMAT_EVENT: FormatAttr = FormatAttr::new(c_str!("event"), c_str!("config:0-47"));
/// ```
#[repr(C)]
pub(crate) struct FormatAttr {
    attr: Opaque<bindings::device_attribute>,
    value: &'static CStr,
}

// SAFETY: sysfs only reads the attribute, and `value` is an immutable static string.
unsafe impl Sync for FormatAttr {}

impl FormatAttr {
    /// Creates the attribute `name`, whose file reads `value` followed by a newline.
    pub(crate) const fn new(name: &'static CStr, value: &'static CStr) -> Self {
        // INVARIANT: The attribute is read-only and shows `value`.
        Self {
            attr: device_attr(name, Self::show),
            value,
        }
    }

    /// # Safety
    ///
    /// `attr` must be passed by sysfs to the `show` callback of a [`FormatAttr`], and `buf` must be
    /// its page-sized buffer.
    unsafe extern "C" fn show(
        _dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // CAST: By the type invariant `attr` is the first field of a `FormatAttr`.
        let this = attr.cast::<Self>();
        // SAFETY: `this` points to a `FormatAttr` in static memory.
        let value = unsafe { (*this).value };
        // SAFETY: `buf` is a sysfs page buffer, the format takes one string argument and `value`
        // is NUL-terminated.
        let len =
            unsafe { bindings::sysfs_emit(buf, c_str!("%s\n").as_char_ptr(), value.as_char_ptr()) };
        len as isize
    }
}

/// The events of an `events/` directory, numbered from 0 in the order of their
/// [`PmuEventAttrs`]: which of them the hardware has, and the `event=` value of each.
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
///     fn any_listed() -> bool {
///         true
///     }
///     fn config(_id: usize) -> u64 {
///         0x1
///     }
/// }
/// ```
pub(crate) trait EventList: 'static {
    /// Whether event `id` is listed.
    fn listed(id: usize) -> bool;
    /// Whether any event is listed; without one there is no `events/` directory.
    fn any_listed() -> bool;
    /// The `event=` value of event `id` (the `config` bits its format names).
    fn config(id: usize) -> u64;
}

/// A read-only attribute of an `events/` directory whose file reads `event=0x...`, like a
/// `PMU_EVENT_ATTR_ID()` whose show callback prints its id.
///
/// # Invariants
///
/// `attr` is a valid `struct device_attribute` with mode 0444, `show` set to
/// [`PmuEventAttr::show`] and no `store`; it is the first field, so a pointer to it is a pointer to
/// the whole `PmuEventAttr`.
///
/// # Examples
///
/// ```ignore
/// static EVENT_ATTRS: [PmuEventAttr<Events>; 1] = [PmuEventAttr::new(c_str!("cpu-cycles"), 0)];
/// static EVENT_LIST: Attributes<1, Events> = Attributes::events(&EVENT_ATTRS);
/// ```
#[repr(C)]
pub(crate) struct PmuEventAttr<T: EventList> {
    attr: Opaque<bindings::device_attribute>,
    id: usize,
    _list: PhantomData<T>,
}

// SAFETY: sysfs only reads the attribute, and `id` is never written after construction.
unsafe impl<T: EventList> Sync for PmuEventAttr<T> {}

impl<T: EventList> PmuEventAttr<T> {
    /// Creates the attribute `name` for event `id` of `T`.
    pub(crate) const fn new(name: &'static CStr, id: usize) -> Self {
        // INVARIANT: The attribute is read-only and shows the event's value.
        Self {
            attr: device_attr(name, Self::show),
            id,
            _list: PhantomData,
        }
    }

    /// # Safety
    ///
    /// `attr` must be passed by sysfs to the `show` callback of an [`PmuEventAttr`], and `buf` must be
    /// its page-sized buffer.
    unsafe extern "C" fn show(
        _dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // CAST: By the type invariant `attr` is the first field of a `PmuEventAttr`.
        let this = attr.cast::<Self>();
        // SAFETY: `this` points to a `PmuEventAttr` in static memory.
        let id = unsafe { (*this).id };
        // SAFETY: `buf` is a sysfs page buffer and the format takes one `unsigned long long`.
        let len = unsafe {
            bindings::sysfs_emit(buf, c_str!("event=0x%llx\n").as_char_ptr(), T::config(id))
        };
        len as isize
    }
}

/// A NULL-terminated array of `N` attributes, as `struct attribute_group::attrs` wants it: format
/// attributes, or the events of the [`EventList`] `T`.
///
/// # Invariants
///
/// `list` holds pointers to `'static` attributes and `end` is null, right after them (`repr(C)`);
/// with an [`EventList`] `T`, entry `i` is event `i` of `T`.
///
/// # Examples
///
/// ```ignore
/// static FORMAT_ATTRS: Attributes<1> = Attributes::new([&FORMAT_EVENT]);
/// ```
#[repr(C)]
pub(crate) struct Attributes<const N: usize, T = ()> {
    list: [*mut bindings::attribute; N],
    end: *mut bindings::attribute,
    _list: PhantomData<T>,
}

// SAFETY: The pointers refer to `Sync` statics and are never written after construction.
unsafe impl<const N: usize, T> Sync for Attributes<N, T> {}

impl<const N: usize> Attributes<N> {
    /// Collects `attrs` into a NULL-terminated array.
    pub(crate) const fn new(attrs: [&'static FormatAttr; N]) -> Self {
        let mut list = [ptr::null_mut(); N];
        let mut i = 0;
        while i < N {
            // CAST: `attr` is the first field of `struct device_attribute`.
            list[i] = attrs[i].attr.get().cast::<bindings::attribute>();
            i += 1;
        }
        // INVARIANT: Every entry points to a static attribute and the array is NULL-terminated.
        Self {
            list,
            end: ptr::null_mut(),
            _list: PhantomData,
        }
    }
}

impl<const N: usize, T: EventList> Attributes<N, T> {
    /// Collects the events of `T` into a NULL-terminated array, event `i` at index `i`.
    pub(crate) const fn events(attrs: &'static [PmuEventAttr<T>; N]) -> Self {
        let mut list = [ptr::null_mut(); N];
        let mut i = 0;
        while i < N {
            // CAST: `attr` is the first field of `struct device_attribute`.
            list[i] = attrs[i].attr.get().cast::<bindings::attribute>();
            i += 1;
        }
        // INVARIANT: Every entry points to a static attribute and the array is NULL-terminated;
        // entry `i` is `attrs[i]`, event `i`.
        Self {
            list,
            end: ptr::null_mut(),
            _list: PhantomData,
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
/// static FORMAT_GROUP: AttributeGroup = AttributeGroup::new(c_str!("format"), &FORMAT_ATTRS);
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
        attrs: &'static Attributes<N, T>,
    ) -> Self {
        let mut group = Self::raw(name, attrs);
        compat::set_group_is_visible(&mut group, Self::event_is_visible::<T>);
        // INVARIANT: As in `new`.
        Self {
            group: Opaque::new(group),
        }
    }

    const fn raw<const N: usize, T>(
        name: &'static CStr,
        attrs: &'static Attributes<N, T>,
    ) -> bindings::attribute_group {
        // SAFETY: All-zero is a valid `attribute_group`: null pointers and no callbacks.
        let mut group: bindings::attribute_group = unsafe { mem::zeroed() };
        group.name = compat::const_char_ptr(name);
        // CAST: sysfs never writes through `attrs`; the C type is not `const` only by history.
        let list = ptr::addr_of!(attrs.list)
            .cast::<*mut bindings::attribute>()
            .cast_mut();
        compat::set_group_attrs(&mut group, list);
        group
    }

    /// The `is_visible` callback of an events group: attribute `n` is event `n`.
    ///
    /// # Safety
    ///
    /// `attr` must be an attribute of a group made by [`AttributeGroup::with_events`] for `T`,
    /// passed by sysfs with its index `n`.
    unsafe extern "C" fn event_is_visible<T: EventList>(
        _kobj: *mut bindings::kobject,
        attr: *mut bindings::attribute,
        n: c_int,
    ) -> bindings::umode_t {
        // sysfs asks about the first attribute once for the directory itself too: the whole
        // group is hidden when no event is listed.
        if n == 0 && !T::any_listed() {
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
