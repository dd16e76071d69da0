//! SM partitions (green contexts): a device's SMs split once into disjoint sets, each with its own
//! streams, so that work on one partition (a decode graph) keeps its SMs while other work (eager
//! kernels, communication, a long prefill) fills the rest.
//!
//! ```no_run
//! use ordo_cuda_core::partition::SmSplit;
//! use ordo_cuda_core::Device;
//! # fn main() -> ordo_cuda_core::Result<()> {
//! // One split of the device's SMs into groups of at least 16 (the driver rounds up to the
//! // device's granularity: 8 SMs on Hopper); one group for decode, every other SM for the rest.
//! let (decode, rest) = SmSplit::new(Device::current()?, 16)?.one_and_rest()?;
//! let decode_stream = decode.stream()?;
//! let other_stream = rest.stream()?;
//! println!("decode runs on {} SMs, the rest on {}", decode.sm_count(), rest.sm_count());
//! // Every stream-correct function, launch and graph launch takes `decode_stream.as_stream()`.
//! # Ok(()) }
//! ```
//!
//! # One split for all partitions
//! [`SmSplit::new`] splits the device's SMs once (`cuDevSmResourceSplitByCount`) into equal
//! groups and the SMs left over; [`SmSplit::into_partitions`] hands each group to at most one
//! partition, so no two partitions share an SM. (Splitting the whole device again for each
//! partition gives sets that overlap.) The driver rounds the group size up to the device's
//! granularity ([`SmGranularity`]; on compute capability 9.0, multiples of 8) and may make fewer
//! groups than the SM count divided by the size; it says how many it made ([`SmSplit::group_count`],
//! [`SmSplit::sms_per_group`], [`SmSplit::remainder_sms`]). The driver documents exceptions: under
//! MPS with an active-thread percentage, or with a module that uses dynamic parallelism loaded on
//! Hopper, kernels may run on more SMs than provisioned (never on fewer).
//!
//! # Streams
//! [`PartitionStream`] is a non-blocking stream of one partition (`cuGreenCtxStreamCreate`).
//! [`PartitionStream::as_stream`] gives the [`StreamRef`] every stream-correct function takes:
//! kernels launched on it run on the partition's SMs; copies, events, waits, stream-ordered
//! allocation and graph launches work as on any stream (the partition's context is the device's
//! primary context with fewer SMs: memory, events and kernels of the primary context are valid on
//! it, and the runtime takes the context from the stream).
//!
//! A graph keeps the context its kernels were captured (or added) in: a graph captured on a plain
//! stream runs its kernels on every SM even when launched on a partition's stream, and one captured
//! on a partition's stream stays on the partition's SMs wherever it is launched. So capture (or
//! build) a decode graph on the partition's stream.
//!
//! # Lifetimes
//! A partition and its streams share the green context (`Arc`): it lives while any of them does.
//! A stream is destroyed on drop (`cudaStreamDestroy`: its queued work still runs). When the last
//! handle goes, the context is destroyed after its work: dropping the last one waits for the
//! partition's queued work (an event recorded on the green context), like the destruction of any
//! context; keep partitions for the life of the engine. A failure there is kept for
//! [`take_drop_errors`](crate::error::take_drop_errors), and the context is then left to the
//! process rather than destroyed under running work.
//!
//! Graphs hold the partition too: a graph captured by ordo ([`capture`](crate::graph::capture),
//! [`capture_into`](crate::graph::capture_into), [`StreamRef::begin_capture`] with
//! [`StreamRef::end_capture`], a [`GraphCache`](crate::graph::GraphCache), the C ABI's graph cache)
//! whose capture began on a partition's stream, or was joined by one (an event recorded in the
//! capture and waited on by the partition's stream), holds that partition's green context (a CUDA
//! user object; a partition stream dropped inside a capture it joined gives the hold at its drop),
//! and so does every graph copied, instantiated or updated from it: drop the partition and its
//! streams whenever suits, and a replay still runs on the partition's SMs, never on a destroyed
//! green context. When a graph is the last holder, CUDA releases its hold on a thread of its own,
//! where no CUDA call may be made: the context is then destroyed by the next
//! [`free_deferred`](crate::staging::free_deferred) (also called by [`SmSplit::new`] when no
//! capture ordo began is open, and by the creation of a staging ring), or left to the process. A
//! graph captured outside ordo (a `cudaStreamBeginCapture` of the program's own on
//! [`PartitionStream::as_raw`]) holds nothing: keep the partition alive while such a graph may
//! launch.
//!
//! # Versions
//! The driver's calls are reached through the entry-point query in their CUDA 12.4 form (stream
//! creation: 12.5), so the runtime's version does not matter; a driver without them gives
//! `cudaErrorCallRequiresNewerDriver` naming the missing function. Built against headers older
//! than CUDA 12.8, every call here is a NotSupported usage error.

mod graph_hold;
mod plan;
mod raw;

pub(crate) use graph_hold::hold_for_capture;

pub use plan::Remainder;

use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::stream::StreamRef;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_int;
use ordo_cuda_sys as sys;
use raw::{DevResource, GreenCtx};

/// The SM granularity a device reports for splits (`cuDeviceGetDevResource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmGranularity {
    /// The device's SMs.
    pub sm_count: u32,
    /// The fewest SMs a group can have (`minSmPartitionSize`; 8 on compute capability 9.0).
    pub min_partition: u32,
    /// Group sizes are multiples of this (`smCoscheduledAlignment`; 8 on compute capability 9.0).
    pub alignment: u32,
}

impl SmGranularity {
    /// What `device` reports.
    pub fn of(device: Device) -> Result<SmGranularity> {
        let all = raw::device_sms(raw::driver_device(device)?)?;
        Ok(SmGranularity {
            sm_count: all.sm.sm_count,
            min_partition: all.sm.min_sm_partition_size,
            alignment: all.sm.sm_coscheduled_alignment,
        })
    }
}

/// One split of a device's SMs into equal groups and the SMs left over, from which disjoint
/// partitions are made ([`into_partitions`](Self::into_partitions)). Made by one
/// `cuDevSmResourceSplitByCount`.
pub struct SmSplit {
    device: Device,
    dev: c_int,
    groups: Vec<DevResource>,
    remainder: Option<DevResource>,
}

impl core::fmt::Debug for SmSplit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SmSplit")
            .field("device", &self.device)
            .field("group_count", &self.group_count())
            .field("sms_per_group", &self.sms_per_group())
            .field("remainder_sms", &self.remainder_sms())
            .finish()
    }
}

impl SmSplit {
    /// Splits `device`'s SMs once into as many groups of at least `min_sms` SMs as the driver
    /// makes (rounded up to the device's granularity), and the SMs left over. Zero `min_sms` or
    /// more than the device has is a usage error, before the split.
    ///
    /// First it frees what graphs let go of on CUDA's threads
    /// ([`free_deferred`](crate::staging::free_deferred): green contexts, whose destruction
    /// synchronises an event, and staging memory), unless a capture ordo began is open on any
    /// thread: then that waits for the next chance (the next call here with no capture open, a
    /// staging ring's creation or drop, a direct call), so that a call inside a capture does not
    /// invalidate it. A capture begun outside ordo (`cudaStreamBeginCapture` of the program's own)
    /// is not seen: call this outside such captures.
    pub fn new(device: Device, min_sms: u32) -> Result<SmSplit> {
        // Green contexts (and staging memory) whose last holder, a graph, let go on a CUDA thread:
        // their drops synchronise, which a capture refuses (or, relaxed, would not expect).
        if !crate::capture_state::captures_open() {
            crate::callback::free_deferred();
        }
        let dev = raw::driver_device(device)?;
        let all = raw::device_sms(dev)?;
        plan::check_min_sms(min_sms, all.sm.sm_count)?;
        let count = raw::count_groups(&all, min_sms)?;
        let count = usize::try_from(count).map_err(|_| Error::invalid("SmSplit::new", "too many groups"))?;
        if count == 0 {
            return Err(Error::invalid("SmSplit::new", "no group of this many SMs fits the device"));
        }
        let mut groups = alloc::vec![DevResource::empty(); count];
        let mut rest = DevResource::empty();
        let made = raw::split(&all, min_sms, &mut groups, &mut rest)?;
        groups.truncate(made);
        Ok(SmSplit { device, dev, groups, remainder: rest.is_sm().then_some(rest) })
    }

    /// The device split.
    pub fn device(&self) -> Device {
        self.device
    }

    /// How many equal groups the split made.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// SMs in each group (the driver makes them equal).
    pub fn sms_per_group(&self) -> u32 {
        self.groups.first().map_or(0, |g| g.sm.sm_count)
    }

    /// SMs left over, in no group (0 when the groups took every SM).
    pub fn remainder_sms(&self) -> u32 {
        self.remainder.as_ref().map_or(0, |r| r.sm.sm_count)
    }

    /// Makes the partitions: partition `i` takes `groups[i]` consecutive groups, and `remainder`
    /// says where the SMs left over go. Each group goes to one partition at most, so their SM sets
    /// are disjoint. More groups than the split made, or a partition with no SMs, is a usage
    /// error before any partition is made.
    pub fn into_partitions(self, groups: &[usize], remainder: Remainder) -> Result<Vec<SmPartition>> {
        let parts = plan::plan(self.groups.len(), self.remainder.is_some(), groups, remainder)?;
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            let mut resources: Vec<DevResource> = self.groups.get(part.groups).unwrap_or_default().to_vec();
            if part.remainder {
                resources.extend(self.remainder);
            }
            out.push(SmPartition { ctx: Arc::new(GreenCtx::create(self.device, self.dev, &mut resources)?) });
        }
        Ok(out)
    }

    /// Two partitions: one group, and every other SM (the other groups and the SMs left over).
    /// The shape of a decode partition beside everything else.
    pub fn one_and_rest(self) -> Result<(SmPartition, SmPartition)> {
        let counts = plan::one_and_rest(self.groups.len(), self.remainder.is_some())?;
        let mut parts = self.into_partitions(&counts, Remainder::ToLast)?.into_iter();
        match (parts.next(), parts.next()) {
            (Some(one), Some(rest)) => Ok((one, rest)),
            _ => Err(Error::invalid("SmSplit::one_and_rest", "the plan made fewer than two partitions")),
        }
    }
}

/// A set of a device's SMs (a green context), from an [`SmSplit`]. Clones share it; it lives while
/// any clone or any of its streams does (see the [module documentation](self) for its
/// destruction).
#[derive(Debug, Clone)]
pub struct SmPartition {
    ctx: Arc<GreenCtx>,
}

impl SmPartition {
    /// The SMs the partition runs kernels on (`cuGreenCtxGetDevResource`).
    pub fn sm_count(&self) -> u32 {
        self.ctx.sm_count
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.ctx.device
    }

    /// A new non-blocking stream of the partition, at default priority.
    pub fn stream(&self) -> Result<PartitionStream> {
        self.stream_with_priority(0)
    }

    /// A new non-blocking stream of the partition at `priority` (`cuGreenCtxStreamCreate`).
    /// CUDA clamps an out-of-range priority silently; ordo refuses it with a clear error instead.
    /// Lower numbers are higher priorities.
    pub fn stream_with_priority(&self, priority: i32) -> Result<PartitionStream> {
        let (least, greatest) = self.ctx.device.stream_priority_range()?;
        if priority > least || priority < greatest {
            return Err(Error::usage(
                UsageKind::InvalidArgument,
                "SmPartition::stream_with_priority",
                "priority outside the device's range [greatest, least] (Device::stream_priority_range)",
            ));
        }
        let raw = self.ctx.create_stream(priority)?;
        // SAFETY: a stream just made, owned by the value returned, which destroys it on drop:
        // alive for as long as the `StreamRef` it hands out is borrowed.
        let stream = unsafe { StreamRef::from_raw(raw.as_ptr()) }
            .ok_or_else(|| crate::error::null_handle("cuGreenCtxStreamCreate"))?;
        // Listed from here to its drop, for the captures it takes part in (`graph_hold`).
        graph_hold::list(stream.as_raw(), &self.ctx);
        Ok(PartitionStream { stream, ctx: Arc::clone(&self.ctx) })
    }

    /// Whether two handles name the same partition.
    pub fn same_as(&self, other: &SmPartition) -> bool {
        Arc::ptr_eq(&self.ctx, &other.ctx)
    }
}

/// An owned non-blocking stream of an [`SmPartition`]: kernels launched on it run on the
/// partition's SMs. Destroyed on drop (`cudaStreamDestroy`: work already enqueued still runs; a
/// failure is kept for [`take_drop_errors`](crate::error::take_drop_errors)); it keeps its
/// partition alive, and so does every graph ordo captures on it (see the
/// [module documentation](self#lifetimes)).
#[derive(Debug)]
pub struct PartitionStream {
    /// Owned: destroyed in `Drop`; only borrowed out, for as long as `self` is.
    stream: StreamRef<'static>,
    ctx: Arc<GreenCtx>,
}

impl PartitionStream {
    /// The borrowed handle, for every stream operation.
    #[inline(always)]
    pub fn as_stream(&self) -> StreamRef<'_> {
        self.stream
    }

    /// The raw handle, still owned by this value.
    #[inline(always)]
    pub fn as_raw(&self) -> sys::cudaStream_t {
        self.stream.as_raw()
    }

    /// The partition the stream belongs to.
    pub fn partition(&self) -> SmPartition {
        SmPartition { ctx: Arc::clone(&self.ctx) }
    }

    /// See [`StreamRef::synchronize`].
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()
    }
}

impl Drop for PartitionStream {
    fn drop(&mut self) {
        // Inside a capture it joined (dropped by the capture's function after joining back), the
        // stream gives the capture's graph its hold now: the capture's end will not find it.
        if let Err(e) = graph_hold::hold_while_capturing(self.stream.as_raw(), &self.ctx) {
            // The graph may hold nothing: the green context is left to the process rather than
            // risk its destruction under the graph's replays.
            core::mem::forget(Arc::clone(&self.ctx));
            crate::error::record_drop_error_value(e);
        }
        // Off the list before the destroy: a capture that reads the list asks only live streams.
        graph_hold::unlist(self.stream.as_raw(), &self.ctx);
        // SAFETY: our stream, destroyed once, here; its green context lives until `ctx` drops,
        // after this.
        let code = unsafe { sys::cudaStreamDestroy(self.stream.as_raw()) };
        crate::error::record_drop_error(code, "cudaStreamDestroy");
    }
}
