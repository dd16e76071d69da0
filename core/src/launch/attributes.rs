//! Launch attributes: what each field of a [`LaunchConfig`] that is not grid, block or shared
//! memory becomes in CUDA (`cudaLaunchAttribute`), and whether a graph's kernel node can keep it.
//!
//! Every attribute is described once, in `Attribute::describe`: its CUDA id and value, its name
//! in errors, and whether CUDA keeps it on a kernel node (`cudaGraphKernelNodeSetAttribute`:
//! priority, cluster and preferred cluster dimensions, cooperative, memory-synchronisation
//! domain) or only on launches (PDL, which a graph holds as a programmatic edge instead, and the
//! two events). A launch writes them into an array on the stack (`Attributes`); a kernel node
//! added by hand gets the node attributes set on it and refuses the others by name; an executable
//! graph's kernel node keeps its attributes, so a new configuration for it carries none.
//!
//! Adding an attribute: a field and a builder in [`LaunchConfig`], then a variant in the
//! `attributes!` list (which sizes the array), its arm in `Attribute::describe` and its line in
//! `LaunchConfig::for_each_attribute`, here; the compiler stops at each place not yet decided, and
//! the tests' `everything` at the one left (docs/architecture.md, "Add a launch attribute").

use super::config::{Dim3, LaunchConfig};
use core::ffi::{c_int, c_uint};
use core::mem::MaybeUninit;
use ordo_cuda_sys as sys;

/// An event named in a [`LaunchConfig`]: the handle of an [`Event`](crate::Event), taken when
/// the configuration was built. The launch that uses it owes that the event is still alive then
/// and belongs to the stream's device (see [`Kernel::launch`](super::Kernel::launch)'s contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchEvent {
    raw: sys::cudaEvent_t,
}

// SAFETY: a handle value; nothing is done with it but the launch, which is `unsafe` and owes that
// the event is alive.
unsafe impl Send for LaunchEvent {}
// SAFETY: as above.
unsafe impl Sync for LaunchEvent {}

impl LaunchEvent {
    /// The event `event`.
    pub fn of(event: &crate::Event) -> LaunchEvent {
        LaunchEvent { raw: event.as_raw() }
    }

    /// A raw event handle; `None` for null. Nothing is done with the handle here: the launch that
    /// uses it owes that it is a live event made with `cudaEventDisableTiming` on the stream's
    /// device (see [`Kernel::launch`](super::Kernel::launch)).
    pub fn from_raw(raw: sys::cudaEvent_t) -> Option<LaunchEvent> {
        (!raw.is_null()).then_some(LaunchEvent { raw })
    }

    /// The raw handle.
    pub fn as_raw(self) -> sys::cudaEvent_t {
        self.raw
    }
}

/// A [`LaunchConfig::programmatic_event`]: the event, and whether each block fires it as it
/// starts rather than when it calls `cudaTriggerProgrammaticLaunchCompletion()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgrammaticEvent {
    /// The event.
    pub event: LaunchEvent,
    /// Each block triggers the event as it starts.
    pub trigger_at_block_start: bool,
}

/// A memory-synchronisation domain (`cudaLaunchMemSyncDomain`): a kernel's memory fences order
/// only with work of its own domain, so that, say, a communication kernel in `Remote` does not
/// wait for the fences of compute kernels in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemSyncDomain {
    /// `cudaLaunchMemSyncDomainDefault`.
    Default,
    /// `cudaLaunchMemSyncDomainRemote`.
    Remote,
}

impl MemSyncDomain {
    fn to_raw(self) -> sys::cudaLaunchMemSyncDomain {
        match self {
            MemSyncDomain::Default => sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainDefault,
            MemSyncDomain::Remote => sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote,
        }
    }
}

/// Declares [`Attribute`] and [`MAX_ATTRIBUTES`], the number of its variants, from one list: an
/// attribute added to the list gets its slot in every launch's array.
macro_rules! attributes {
    ($($variant:ident $(($value:ty))?,)*) => {
        /// One attribute a [`LaunchConfig`] sets, with its value.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Attribute {
            $($variant $(($value))?,)*
        }

        /// The most attributes one launch sets: one a variant of [`Attribute`], counted from its list.
        const MAX_ATTRIBUTES: usize = [$(stringify!($variant)),*].len();
    };
}

attributes! {
    Pdl,
    Priority(i32),
    Cluster(Dim3),
    Cooperative,
    MemSyncDomain(MemSyncDomain),
    PreferredCluster(Dim3),
    ProgrammaticEvent(ProgrammaticEvent),
    LaunchCompletionEvent(LaunchEvent),
}

/// What ordo tells of an attribute that a graph's kernel node cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusals {
    /// Why a kernel node added by hand refuses it; `None` where CUDA keeps it on nodes.
    pub(crate) node: Option<&'static str>,
    /// Why a new configuration for an executable graph's kernel node refuses it.
    pub(crate) exec: &'static str,
}

/// The [`Refusals`] of the attribute named `$name`, kept on nodes (`nodes`) or not
/// (`launches only: why`).
macro_rules! refusals {
    ($name:literal, nodes) => {
        Refusals { node: None, exec: refusals!(@exec $name) }
    };
    ($name:literal, launches only: $why:literal) => {
        Refusals {
            node: Some(concat!($name, " is for launches only: CUDA keeps none on a graph's kernel node (", $why, ")")),
            exec: refusals!(@exec $name),
        }
    };
    (@exec $name:literal) => {
        concat!(
            $name,
            ": an executable graph's kernel node keeps the attributes it was made with; pass a configuration without it"
        )
    };
}

impl Attribute {
    /// Everything ordo knows of the attribute: CUDA's id and value, and what a kernel node says
    /// of it. The one place each attribute is described.
    #[inline(always)]
    fn describe(self) -> (sys::cudaLaunchAttributeID, sys::cudaLaunchAttributeValue, Refusals) {
        use sys::cudaLaunchAttributeID as Id;
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        let (id, refusals) = match self {
            Attribute::Pdl => {
                val.programmaticStreamSerializationAllowed = 1;
                (
                    Id::cudaLaunchAttributeProgrammaticStreamSerialization,
                    refusals!(
                        "PDL (cudaLaunchAttributeProgrammaticStreamSerialization)",
                        launches only: "a graph holds PDL as a programmatic edge: capture the launch to get one"
                    ),
                )
            }
            Attribute::Priority(priority) => {
                val.priority = priority;
                (Id::cudaLaunchAttributePriority, refusals!("the priority (cudaLaunchAttributePriority)", nodes))
            }
            Attribute::Cluster(c) => {
                val.clusterDim.x = c.x;
                val.clusterDim.y = c.y;
                val.clusterDim.z = c.z;
                (
                    Id::cudaLaunchAttributeClusterDimension,
                    refusals!("the cluster dimensions (cudaLaunchAttributeClusterDimension)", nodes),
                )
            }
            Attribute::Cooperative => {
                val.cooperative = 1;
                (
                    Id::cudaLaunchAttributeCooperative,
                    refusals!("a cooperative launch (cudaLaunchAttributeCooperative)", nodes),
                )
            }
            Attribute::MemSyncDomain(domain) => {
                val.memSyncDomain = domain.to_raw();
                (
                    Id::cudaLaunchAttributeMemSyncDomain,
                    refusals!("the memory-synchronisation domain (cudaLaunchAttributeMemSyncDomain)", nodes),
                )
            }
            Attribute::PreferredCluster(p) => (
                preferred_cluster(&mut val, p),
                refusals!("the preferred cluster dimensions (cudaLaunchAttributePreferredClusterDimension)", nodes),
            ),
            Attribute::ProgrammaticEvent(e) => {
                val.programmaticEvent.event = e.event.raw;
                val.programmaticEvent.flags = 0;
                val.programmaticEvent.triggerAtBlockStart = c_int::from(e.trigger_at_block_start);
                (
                    Id::cudaLaunchAttributeProgrammaticEvent,
                    refusals!(
                        "a programmatic event (cudaLaunchAttributeProgrammaticEvent)",
                        launches only: "record events in a graph with event nodes, or capture the launch"
                    ),
                )
            }
            Attribute::LaunchCompletionEvent(e) => {
                val.launchCompletionEvent.event = e.raw;
                val.launchCompletionEvent.flags = 0;
                (
                    Id::cudaLaunchAttributeLaunchCompletionEvent,
                    refusals!(
                        "a launch-completion event (cudaLaunchAttributeLaunchCompletionEvent)",
                        launches only: "record events in a graph with event nodes, or capture the launch"
                    ),
                )
            }
        };
        (id, val, refusals)
    }

    /// CUDA's attribute.
    #[inline(always)]
    pub(crate) fn to_raw(self) -> sys::cudaLaunchAttribute {
        let (id, val, _) = self.describe();
        sys::cudaLaunchAttribute { id, pad: [0; 4], val }
    }

    /// CUDA's id of the attribute.
    pub(crate) fn id(self) -> sys::cudaLaunchAttributeID {
        self.describe().0
    }

    /// What a kernel node says of it.
    pub(crate) fn refusals(self) -> Refusals {
        self.describe().2
    }
}

/// The preferred cluster dimensions into `val`; CUDA's id (CUDA 12.8 and later headers).
#[cfg(cuda_12_8)]
#[inline(always)]
fn preferred_cluster(val: &mut sys::cudaLaunchAttributeValue, p: Dim3) -> sys::cudaLaunchAttributeID {
    val.preferredClusterDim.x = p.x;
    val.preferredClusterDim.y = p.y;
    val.preferredClusterDim.z = p.z;
    sys::cudaLaunchAttributeID::cudaLaunchAttributePreferredClusterDimension
}

/// Headers without the attribute: CUDA's ignored id. Never reaches CUDA:
/// [`LaunchConfig::validate`] refuses preferred cluster dimensions with these headers.
#[cfg(not(cuda_12_8))]
#[inline(always)]
fn preferred_cluster(_val: &mut sys::cudaLaunchAttributeValue, _p: Dim3) -> sys::cudaLaunchAttributeID {
    sys::cudaLaunchAttributeID::cudaLaunchAttributeIgnore
}

impl LaunchConfig {
    /// Calls `f` with each attribute the configuration sets, in a fixed order.
    #[inline(always)]
    pub(crate) fn for_each_attribute(&self, mut f: impl FnMut(Attribute)) {
        // Every field named: a field added later does not compile here until it is decided. Bound
        // by reference: a copy of the configuration (`= *self`) changed the general launch's code.
        let LaunchConfig {
            grid: _,
            block: _,
            shared_mem_bytes: _,
            pdl,
            priority,
            cluster,
            cooperative,
            mem_sync_domain,
            preferred_cluster,
            programmatic_event,
            launch_completion_event,
        } = self;
        if *pdl {
            f(Attribute::Pdl);
        }
        if let Some(priority) = *priority {
            f(Attribute::Priority(priority));
        }
        if let Some(c) = *cluster {
            f(Attribute::Cluster(c));
        }
        if *cooperative {
            f(Attribute::Cooperative);
        }
        if let Some(domain) = *mem_sync_domain {
            f(Attribute::MemSyncDomain(domain));
        }
        if let Some(p) = *preferred_cluster {
            f(Attribute::PreferredCluster(p));
        }
        if let Some(e) = *programmatic_event {
            f(Attribute::ProgrammaticEvent(e));
        }
        if let Some(e) = *launch_completion_event {
            f(Attribute::LaunchCompletionEvent(e));
        }
    }

    /// The first attribute for which `refused` gives a reason, with that reason.
    pub(crate) fn first_refused(&self, refused: impl Fn(Refusals) -> Option<&'static str>) -> Option<&'static str> {
        let mut first = None;
        self.for_each_attribute(|a| {
            if first.is_none() {
                first = refused(a.refusals());
            }
        });
        first
    }
}

/// A launch's attributes, on the stack, in CUDA's form (`cudaLaunchAttribute`, whose layout the
/// driver's `CUlaunchAttribute` shares: the same ids, an 8-byte header, the same 64-byte value).
pub(crate) struct Attributes {
    raw: [MaybeUninit<sys::cudaLaunchAttribute>; MAX_ATTRIBUTES],
    len: usize,
}

impl Attributes {
    /// The attributes `config` sets. Only those are written (the rest stay uninitialised).
    #[inline(always)]
    pub(crate) fn of(config: &LaunchConfig) -> Attributes {
        let mut attrs = Attributes { raw: [MaybeUninit::uninit(); MAX_ATTRIBUTES], len: 0 };
        config.for_each_attribute(|a| {
            // One slot a variant, each set at most once: `len` stays below MAX_ATTRIBUTES.
            if let Some(slot) = attrs.raw.get_mut(attrs.len) {
                slot.write(a.to_raw());
                attrs.len += 1;
            }
        });
        attrs
    }

    /// The array for CUDA: null when empty, else the first of [`len`](Self::len) written
    /// attributes, valid while `self` is not moved.
    #[inline(always)]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::cudaLaunchAttribute {
        if self.len == 0 {
            core::ptr::null_mut()
        } else {
            self.raw.as_mut_ptr().cast()
        }
    }

    /// How many were written.
    #[inline(always)]
    pub(crate) fn len(&self) -> c_uint {
        self.len as c_uint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event handle for configurations that are never launched.
    fn unlaunched_event() -> LaunchEvent {
        LaunchEvent { raw: core::ptr::NonNull::dangling().as_ptr() }
    }

    /// A configuration with every attribute set.
    fn everything() -> LaunchConfig {
        let mut config = LaunchConfig::new(4, 32)
            .with_pdl(true)
            .with_priority(-3)
            .with_cluster(2)
            .with_cooperative(true)
            .with_mem_sync_domain(MemSyncDomain::Remote)
            .with_preferred_cluster(4);
        config.programmatic_event = Some(ProgrammaticEvent { event: unlaunched_event(), trigger_at_block_start: true });
        config.launch_completion_event = Some(unlaunched_event());
        config
    }

    /// `MAX_ATTRIBUTES` counts `Attribute`'s variants, and a configuration with every attribute
    /// uses each variant once: a variant added to the list but not to `for_each_attribute` or to
    /// `everything` fails here, rather than an attribute going missing from a launch.
    #[test]
    fn the_array_has_a_slot_for_each_kind_of_attribute() {
        let mut kinds = alloc::vec::Vec::new();
        everything().for_each_attribute(|a| kinds.push(core::mem::discriminant(&a)));
        assert_eq!(kinds.len(), MAX_ATTRIBUTES, "every kind once: {kinds:?}");
        for (i, kind) in kinds.iter().enumerate() {
            assert!(!kinds[..i].contains(kind), "{kind:?} twice");
        }
        assert_eq!(Attributes::of(&everything()).len() as usize, MAX_ATTRIBUTES, "none dropped");
    }

    #[test]
    fn each_attribute_is_written_once_with_its_value() {
        let config = everything();
        let event = unlaunched_event();
        let mut attrs = Attributes::of(&config);
        assert_eq!(attrs.len() as usize, MAX_ATTRIBUTES, "one slot a variant, all used");
        // SAFETY: `len` attributes were written.
        let raw = unsafe { core::slice::from_raw_parts(attrs.as_mut_ptr(), attrs.len() as usize) };
        use sys::cudaLaunchAttributeID as Id;
        let ids: alloc::vec::Vec<_> = raw.iter().map(|a| a.id).collect();
        let mut expect = alloc::vec![
            Id::cudaLaunchAttributeProgrammaticStreamSerialization,
            Id::cudaLaunchAttributePriority,
            Id::cudaLaunchAttributeClusterDimension,
            Id::cudaLaunchAttributeCooperative,
            Id::cudaLaunchAttributeMemSyncDomain,
            preferred_cluster(&mut sys::cudaLaunchAttributeValue { pad: [0; 64] }, Dim3::new(1, 1, 1)),
            Id::cudaLaunchAttributeProgrammaticEvent,
            Id::cudaLaunchAttributeLaunchCompletionEvent,
        ];
        assert_eq!(ids, expect);
        expect.dedup();
        assert_eq!(expect.len(), MAX_ATTRIBUTES, "no id twice");
        // SAFETY: the union members each id names, as written above.
        unsafe {
            assert_eq!(raw[0].val.programmaticStreamSerializationAllowed, 1);
            assert_eq!(raw[1].val.priority, -3);
            assert_eq!((raw[2].val.clusterDim.x, raw[2].val.clusterDim.y, raw[2].val.clusterDim.z), (2, 1, 1));
            assert_eq!(raw[3].val.cooperative, 1);
            assert_eq!(raw[4].val.memSyncDomain, sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote);
            assert_eq!(raw[6].val.programmaticEvent.event, event.raw);
            assert_eq!(raw[6].val.programmaticEvent.triggerAtBlockStart, 1);
            assert_eq!(raw[7].val.launchCompletionEvent.event, event.raw);
        }
        assert!(Attributes::of(&LaunchConfig::new(1, 1)).as_mut_ptr().is_null(), "none: a null array");
    }

    #[test]
    fn nodes_keep_what_cuda_keeps_on_nodes_and_refuse_the_rest_by_name() {
        let event = unlaunched_event();
        let node_refusal = |c: LaunchConfig| c.first_refused(|r| r.node);
        for kept in [
            LaunchConfig::new(4, 32).with_priority(0),
            LaunchConfig::new(4, 32).with_cluster(2),
            LaunchConfig::new(4, 32).with_cooperative(true),
            LaunchConfig::new(4, 32).with_mem_sync_domain(MemSyncDomain::Remote),
            LaunchConfig::new(4, 32).with_cluster(2).with_preferred_cluster(4),
        ] {
            assert_eq!(node_refusal(kept), None, "{kept:?}");
            assert!(kept.first_refused(|r| Some(r.exec)).is_some(), "an executable graph's node takes none");
        }
        let mut pdl = LaunchConfig::new(4, 32).with_pdl(true);
        assert!(node_refusal(pdl).is_some_and(|m| m.contains("PDL") && m.contains("programmatic edge")));
        pdl.pdl = false;
        pdl.programmatic_event = Some(ProgrammaticEvent { event, trigger_at_block_start: false });
        assert!(node_refusal(pdl).is_some_and(|m| m.contains("cudaLaunchAttributeProgrammaticEvent")));
        let mut completion = LaunchConfig::new(4, 32);
        completion.launch_completion_event = Some(event);
        assert!(node_refusal(completion).is_some_and(|m| m.contains("cudaLaunchAttributeLaunchCompletionEvent")));
        let exec = LaunchConfig::new(4, 32).with_cooperative(true).first_refused(|r| Some(r.exec));
        assert!(exec.is_some_and(|m| m.contains("cudaLaunchAttributeCooperative")), "{exec:?}");
        assert_eq!(LaunchConfig::new(4, 32).first_refused(|r| Some(r.exec)), None, "no attributes, nothing refused");
    }
}
