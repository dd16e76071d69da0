//! The SM-partition exports: `ordo_sm_split_query`, `ordo_sm_partitions_create`,
//! `ordo_sm_partition_sm_count`, `ordo_sm_partition_destroy`, `ordo_sm_stream_create`,
//! `ordo_sm_stream_handle` and `ordo_sm_stream_destroy`. The model knows device 0's SM count and
//! granularity ([`Facts::sm`]), and takes a split's groups from `ordo_sm_split_query` of the same
//! device and size, which makes the split a create makes.

use crate::fuzz::*;
use core::ffi::c_int;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

/// What a split of a device's SMs gives, as the model predicts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Groups are made.
    Made,
    /// `ORDO_ERROR_INVALID_ARGUMENT`: a negative device, zero SMs a group, more than the device has.
    Refused,
    /// CUDA's status, not sticky: no driver, or no such device.
    Cuda,
    /// Some failure (a GPU whose driver or headers have no green contexts).
    Failed,
}

/// The SM counts of the partitions that `groups` and `remainder` ask of a split of `group_count`
/// groups of `per` SMs and `rem` SMs left over, in order (the SMs left over last, as a partition of
/// their own, with `ORDO_SM_REMAINDER_OWN`); `None` where ordo.h says the plan is refused: no
/// partition at all, more groups than the split made, a partition with no SMs.
fn planned_sms(group_count: usize, per: u32, rem: u32, groups: &[usize], remainder: c_int) -> Option<Vec<u32>> {
    if groups.is_empty() && remainder != ORDO_SM_REMAINDER_OWN {
        return None;
    }
    if remainder == ORDO_SM_REMAINDER_OWN && rem == 0 {
        return None;
    }
    let mut sms = Vec::new();
    let mut next = 0usize;
    for (i, &n) in groups.iter().enumerate() {
        let end = next.checked_add(n)?;
        if end > group_count {
            return None;
        }
        let takes_rest = i + 1 == groups.len() && remainder == ORDO_SM_REMAINDER_TO_LAST && rem > 0;
        if n == 0 && !takes_rest {
            return None;
        }
        sms.push(u32::try_from(n).ok()? * per + if takes_rest { rem } else { 0 });
        next = end;
    }
    if remainder == ORDO_SM_REMAINDER_OWN {
        sms.push(rem);
    }
    Some(sms)
}

impl Fuzz<'_> {
    /// A device for the SM calls: negative, device 0 (the one [`Facts::sm`] describes), one past
    /// the last, or `i32::MAX`.
    fn sm_device(&mut self) -> c_int {
        match self.rng.below(8) {
            0 => -1,
            1 => i32::MIN,
            2 => self.facts.devices,
            3 => i32::MAX,
            _ => 0,
        }
    }

    /// SMs a group: zero, sizes device 0 can split (1 is rounded up to its granularity), and
    /// more than it has.
    fn sm_min(&mut self) -> u32 {
        let sms = self.facts.sm.map_or(132, |g| g.sm_count);
        [0, 1, 8, 16, sms / 4, sms / 2, sms + 1, u32::MAX][self.rng.below(8) as usize]
    }

    /// What a split of `device` by `min_sms` gives (see [`Split`]).
    fn split(&self, device: c_int, min_sms: u32) -> Split {
        if device < 0 {
            return Split::Refused;
        }
        if !self.gpu || device >= self.facts.devices {
            return Split::Cuda;
        }
        let Some(g) = self.facts.sm else { return Split::Failed };
        // The driver rounds a group up to the device's granularity.
        let align = u64::from(g.alignment.max(1));
        let rounded = u64::from(min_sms.max(g.min_partition)).div_ceil(align) * align;
        if min_sms == 0 || min_sms > g.sm_count || rounded > u64::from(g.sm_count) {
            Split::Refused
        } else {
            Split::Made
        }
    }

    /// Checks a status against what a split was predicted to give.
    fn check_split(&self, st: OrdoStatus, want: Split, what: &str) {
        match want {
            Split::Made => assert_eq!(st, ORDO_SUCCESS, "{what}"),
            Split::Refused => assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "{what}"),
            Split::Cuda => assert!((1..=999).contains(&st) && ordo_status_is_sticky(st) == 0, "{what}: {st}"),
            Split::Failed => assert_ne!(st, ORDO_SUCCESS, "{what}"),
        }
    }

    /// `ordo_sm_split_query` of a random device and size, one out-pointer null now and then. On a
    /// split made: at least one group of at least `min_sms` SMs, a multiple of the granularity, and
    /// no more SMs in all than the device has.
    pub(crate) fn sm_split_query(&mut self) {
        let (device, min_sms) = (self.sm_device(), self.sm_min());
        let null_at = if self.rng.chance(6) { self.rng.below(3) as usize } else { 3 };
        let mut out = [u32::MAX; 3];
        let p = out.as_mut_ptr();
        // SAFETY: inside `out`.
        let ptr = |i: usize| if i == null_at { null_mut() } else { unsafe { p.add(i) } };
        let st = self.record(unsafe { ordo_sm_split_query(device, min_sms, ptr(0), ptr(1), ptr(2)) }, "sm_split_query");
        let what = format!("sm_split_query(device {device}, {min_sms} SMs)");
        if null_at < 3 {
            assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "{what}: a null out");
            return;
        }
        self.check_split(st, self.split(device, min_sms), &what);
        if st == ORDO_SUCCESS {
            let g = self.facts.sm.unwrap();
            let [groups, per, rem] = out;
            assert!(groups >= 1 && per >= min_sms && per % g.alignment.max(1) == 0, "{what}: {out:?}");
            assert!(u64::from(groups) * u64::from(per) + u64::from(rem) <= u64::from(g.sm_count), "{what}: {out:?}");
        }
    }

    /// `ordo_sm_partitions_create` of a random split and plan: counts past the cap, groups null or
    /// misaligned, zero or overflowing group counts, unknown remainders, a null or misaligned out.
    /// The split is asked first (`ordo_sm_split_query`, the same split); a refused split refuses
    /// the create the same way, a plan is refused exactly where ordo.h says, and each partition
    /// made has the SMs its groups (and the SMs left over) hold. The partitions join the handles.
    pub(crate) fn sm_partitions_create(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let (device, min_sms) = (self.sm_device(), self.sm_min());
        let count = match self.rng.below(8) {
            0 => 0,
            1 => 5000,
            2 => 3,
            3 | 4 => 2,
            _ => 1,
        };
        let pick = |rng: &mut crate::support::Rng| match rng.below(10) {
            0 => 0,
            1 => usize::MAX,
            2 | 3 => 2,
            _ => 1,
        };
        let groups = [pick(&mut self.rng), pick(&mut self.rng), pick(&mut self.rng), 0];
        let (groups_ptr, bad_groups) = match self.rng.below(10) {
            0 => (core::ptr::null(), true),
            // SAFETY: one byte into the array: still inside it (refused before it is read).
            1 => (unsafe { groups.as_ptr().cast::<u8>().add(1) }.cast::<usize>(), true),
            _ => (groups.as_ptr(), false),
        };
        let remainder = match self.rng.below(8) {
            0 => 7,
            1 => -1,
            2 | 3 => ORDO_SM_REMAINDER_OWN,
            4 | 5 => ORDO_SM_REMAINDER_TO_LAST,
            _ => ORDO_SM_REMAINDER_UNUSED,
        };
        let mut out = [null_mut::<OrdoSmPartition>(); 5];
        let (out_ptr, bad_out) = match self.rng.below(10) {
            0 => (null_mut(), true),
            // SAFETY: one byte into the array: still inside it (refused before it is written).
            1 => (unsafe { out.as_mut_ptr().cast::<u8>().add(1) }.cast::<*mut OrdoSmPartition>(), true),
            _ => (out.as_mut_ptr(), false),
        };
        let (mut g, mut per, mut rem) = (0u32, 0u32, 0u32);
        let split =
            self.record(unsafe { ordo_sm_split_query(device, min_sms, &mut g, &mut per, &mut rem) }, "sm_split_query");
        let st = self.record(
            unsafe { ordo_sm_partitions_create(device, min_sms, groups_ptr, count, remainder, out_ptr) },
            "sm_partitions_create",
        );
        let what = format!(
            "sm_partitions_create(device {device}, {min_sms} SMs, {count} of {groups:?}, remainder {remainder})"
        );
        let refused = bad_out
            || !(ORDO_SM_REMAINDER_UNUSED..=ORDO_SM_REMAINDER_OWN).contains(&remainder)
            || count > 4096
            || (count > 0 && bad_groups)
            || device < 0;
        if refused {
            assert_eq!(st, ia, "{what}: a bad argument");
        } else if split != ORDO_SUCCESS {
            assert_eq!(st, split, "{what}: the split fails as the query's did");
        } else {
            match planned_sms(g as usize, per, rem, &groups[..count], remainder) {
                None => assert_eq!(st, ia, "{what}: a plan the split ({g} x {per} + {rem}) cannot meet"),
                Some(sms) => {
                    assert_eq!(st, ORDO_SUCCESS, "{what}");
                    for (i, &want) in sms.iter().enumerate() {
                        let mut n = 0u32;
                        // A partition just made, known to this thread alone.
                        assert_eq!(unsafe { ordo_sm_partition_sm_count(out[i], &mut n) }, ORDO_SUCCESS, "{what}");
                        assert_eq!(n, want, "{what}: partition {i} of the split {g} x {per} + {rem}");
                    }
                    assert!(out[sms.len()..].iter().all(|p| p.is_null()), "{what}: no more handles than partitions");
                    for &p in &out[..sms.len()] {
                        self.add(p as usize, Kind::Partition);
                    }
                    return;
                }
            }
        }
        assert!(out.iter().all(|p| p.is_null()), "{what}: nothing written on a failure");
    }

    /// `ordo_sm_partition_sm_count` of a random handle, into a null out now and then.
    pub(crate) fn sm_partition_sm_count(&mut self) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Partition);
        let null_out = self.rng.chance(8);
        let mut n = 0u32;
        let out = if null_out { null_mut() } else { &mut n as *mut u32 };
        let st = self.record(unsafe { ordo_sm_partition_sm_count(h as *mut OrdoSmPartition, out) }, "sm_count");
        if !live {
            assert_eq!(st, ih, "sm_count: not a live partition");
        } else if null_out {
            assert!(st == ia || st == ih, "sm_count: a null out: {st}");
        } else {
            assert!(st == ORDO_SUCCESS || st == ih, "sm_count: {st}");
            let sms = self.facts.sm.map_or(u32::MAX, |g| g.sm_count);
            assert!(st != ORDO_SUCCESS || (1..=sms).contains(&n), "sm_count: {n} of {sms}");
        }
    }

    /// `ordo_sm_partition_destroy` of a random handle.
    pub(crate) fn sm_partition_destroy(&mut self) {
        let (h, _) = self.handle(Kind::Partition);
        ordo_sm_partition_destroy(h as *mut OrdoSmPartition);
        self.forget(h, Kind::Partition);
    }

    /// `ordo_sm_stream_create` on a random handle, at a priority inside or outside device 0's
    /// range, into a null out now and then. The streams join the handles.
    pub(crate) fn sm_stream_create(&mut self) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Partition);
        let (least, greatest) = self.facts.priorities;
        let priority = match self.rng.below(6) {
            0 => least.saturating_add(1),
            1 => greatest.saturating_sub(1),
            2 => greatest,
            3 => i32::MIN,
            _ => least,
        };
        let null_out = self.rng.chance(8);
        let mut s = null_mut::<OrdoSmStream>();
        let out = if null_out { null_mut() } else { &mut s as *mut *mut OrdoSmStream };
        let st =
            self.record(unsafe { ordo_sm_stream_create(h as *mut OrdoSmPartition, priority, out) }, "sm_stream_create");
        if null_out {
            assert_eq!(st, ia, "sm_stream_create: a null out");
        } else if !live {
            assert_eq!(st, ih, "sm_stream_create: not a live partition");
        } else if priority > least || priority < greatest {
            assert!(st == ia || st == ih, "sm_stream_create: priority {priority} outside [{greatest}, {least}]: {st}");
        } else {
            assert!(st == ORDO_SUCCESS || st == ih, "sm_stream_create (priority {priority}): {st}");
        }
        if st == ORDO_SUCCESS {
            assert!(!s.is_null());
            self.add(s as usize, Kind::SmStream);
        } else {
            assert!(s.is_null(), "sm_stream_create: nothing written on a failure");
        }
    }

    /// `ordo_sm_stream_handle` of a random handle, into a null out now and then.
    pub(crate) fn sm_stream_handle(&mut self) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::SmStream);
        let null_out = self.rng.chance(8);
        let mut raw: sys::cudaStream_t = null_mut();
        let out = if null_out { null_mut() } else { &mut raw as *mut sys::cudaStream_t };
        let st = self.record(unsafe { ordo_sm_stream_handle(h as *mut OrdoSmStream, out) }, "sm_stream_handle");
        if !live {
            assert_eq!(st, ih, "sm_stream_handle: not a live stream");
        } else if null_out {
            assert!(st == ia || st == ih, "sm_stream_handle: a null out: {st}");
        } else {
            assert!(st == ORDO_SUCCESS || st == ih, "sm_stream_handle: {st}");
            assert!(st != ORDO_SUCCESS || !raw.is_null(), "sm_stream_handle: a stream");
        }
    }

    /// `ordo_sm_stream_destroy` of a random handle.
    pub(crate) fn sm_stream_destroy(&mut self) {
        let (h, _) = self.handle(Kind::SmStream);
        ordo_sm_stream_destroy(h as *mut OrdoSmStream);
        self.forget(h, Kind::SmStream);
    }
}
