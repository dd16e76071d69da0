//! SM partitions (green contexts) and their streams: the C face of
//! [`ordo_cuda_core::partition`]. A partition handle and a stream handle each hold the partition;
//! the raw `cudaStream_t` of a stream handle goes to every CUDA call and every ordo export that
//! takes a stream.

use super::check::{non_null, write_out};
use super::context::{Context, InContext};
use super::handles;
use super::status::{guard, guard_void, invalid, OrdoStatus};
use core::ffi::c_int;
use ordo_cuda_core::partition::{PartitionStream, Remainder, SmPartition, SmSplit};
use ordo_cuda_core::{sys, Device};

/// The C handle type of an SM partition: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoSmPartition {
    _opaque: [u8; 0],
}

/// The C handle type of a stream of an SM partition: opaque, never dereferenced.
#[repr(C)]
pub struct OrdoSmStream {
    _opaque: [u8; 0],
}

/// The SMs a split leaves over go to no partition.
pub const ORDO_SM_REMAINDER_UNUSED: c_int = 0;
/// The SMs a split leaves over go to the last partition.
pub const ORDO_SM_REMAINDER_TO_LAST: c_int = 1;
/// The SMs a split leaves over make a partition of their own, after the others.
pub const ORDO_SM_REMAINDER_OWN: c_int = 2;

/// At most this many partitions a create.
const MAX_PARTITIONS: usize = 4096;

type PartitionObject = InContext<SmPartition>;
type StreamObject = InContext<PartitionStream>;

fn device(ordinal: c_int) -> Result<Device, super::status::Failure> {
    if ordinal < 0 {
        return Err(invalid("device_ordinal", "negative device ordinal"));
    }
    Ok(Device::from_ordinal(ordinal))
}

/// What one split of `device`'s SMs into groups of at least `min_sms` gives: the groups, the SMs
/// in each, and the SMs left over. Makes no partition.
///
/// # Safety
/// The C contract: the three out-pointers are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_sm_split_query(
    device_ordinal: c_int,
    min_sms: u32,
    group_count: *mut u32,
    sms_per_group: *mut u32,
    remainder_sms: *mut u32,
) -> OrdoStatus {
    guard("ordo_sm_split_query", || {
        for (p, arg) in
            [(group_count, "group_count"), (sms_per_group, "sms_per_group"), (remainder_sms, "remainder_sms")]
        {
            non_null(p.cast_const(), arg)?;
        }
        let split = SmSplit::new(device(device_ordinal)?, min_sms)?;
        let groups =
            u32::try_from(split.group_count()).map_err(|_| invalid("min_sms", "more groups than a uint32_t holds"))?;
        write_out(group_count, groups, "group_count")?;
        write_out(sms_per_group, split.sms_per_group(), "sms_per_group")?;
        write_out(remainder_sms, split.remainder_sms(), "remainder_sms")
    })
}

/// Splits `device`'s SMs once into groups of at least `min_sms` and makes `count` partitions of
/// it, partition `i` taking `groups[i]` consecutive groups; `remainder` (`ORDO_SM_REMAINDER_*`)
/// says where the SMs left over go. `out` receives `count` handles, one more with
/// `ORDO_SM_REMAINDER_OWN`. No two partitions share an SM.
///
/// # Safety
/// The C contract: `groups` holds `count` values (or is NULL when `count` is 0); `out` holds
/// `count` writable handles, `count + 1` with `ORDO_SM_REMAINDER_OWN`.
#[no_mangle]
pub unsafe extern "C" fn ordo_sm_partitions_create(
    device_ordinal: c_int,
    min_sms: u32,
    groups: *const usize,
    count: usize,
    remainder: c_int,
    out: *mut *mut OrdoSmPartition,
) -> OrdoStatus {
    guard("ordo_sm_partitions_create", || {
        non_null(out.cast_const(), "out")?;
        let remainder = match remainder {
            ORDO_SM_REMAINDER_UNUSED => Remainder::Unused,
            ORDO_SM_REMAINDER_TO_LAST => Remainder::ToLast,
            ORDO_SM_REMAINDER_OWN => Remainder::Own,
            _ => return Err(invalid("remainder", "not an ORDO_SM_REMAINDER_* value")),
        };
        if count > MAX_PARTITIONS {
            return Err(invalid("count", "more than 4096 partitions"));
        }
        let groups: &[usize] = if count == 0 {
            &[]
        } else {
            non_null(groups, "groups")?;
            // SAFETY: checked non-null and aligned; `count` values by the C contract.
            unsafe { core::slice::from_raw_parts(groups, count) }
        };
        let device = device(device_ordinal)?;
        let partitions = SmSplit::new(device, min_sms)?.into_partitions(groups, remainder)?;
        let context = Context::of(device)?;
        let mut made: Vec<*mut OrdoSmPartition> = Vec::with_capacity(partitions.len());
        for p in partitions {
            match handles::register(InContext::made_in(context, p)) {
                Ok(h) => made.push(h),
                Err(e) => {
                    for h in made {
                        drop(handles::remove::<PartitionObject, _>(h));
                    }
                    return Err(e);
                }
            }
        }
        for (i, h) in made.into_iter().enumerate() {
            // SAFETY: `out` holds as many writable handles as partitions asked for (the C
            // contract); checked non-null and aligned above, and `i` stays below that count.
            unsafe { out.add(i).write(h) };
        }
        Ok(())
    })
}

/// The SMs the partition runs kernels on.
///
/// # Safety
/// The C contract: `sm_count` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_sm_partition_sm_count(partition: *mut OrdoSmPartition, sm_count: *mut u32) -> OrdoStatus {
    guard("ordo_sm_partition_sm_count", || {
        handles::with_live(partition, |p: &SmPartition| write_out(sm_count, p.sm_count(), "sm_count"))
    })
}

/// Destroys a partition handle. Its streams keep the partition; the last of them and the handle
/// to go waits for the partition's work, then destroys its green context. NULL, destroyed and
/// unknown handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_sm_partition_destroy(partition: *mut OrdoSmPartition) {
    guard_void("ordo_sm_partition_destroy", || drop(handles::remove::<PartitionObject, _>(partition)));
}

/// Creates a non-blocking stream of the partition at `priority` (0 is the default; lower is
/// higher; outside the device's range is `ORDO_ERROR_INVALID_ARGUMENT`).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_sm_stream_create(
    partition: *mut OrdoSmPartition,
    priority: c_int,
    out: *mut *mut OrdoSmStream,
) -> OrdoStatus {
    handles::create("ordo_sm_stream_create", out, || {
        let p = handles::get::<PartitionObject, _>(partition)?;
        let stream = p.get()?.stream_with_priority(priority)?;
        Ok(InContext::made_in(p.context(), stream))
    })
}

/// The stream's `cudaStream_t`, for every CUDA call and every ordo export that takes a stream;
/// valid until `ordo_sm_stream_destroy`.
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_sm_stream_handle(stream: *mut OrdoSmStream, out: *mut sys::cudaStream_t) -> OrdoStatus {
    guard("ordo_sm_stream_handle", || {
        handles::with_live(stream, |s: &PartitionStream| write_out(out, s.as_raw(), "out"))
    })
}

/// Destroys a stream (`cudaStreamDestroy`: its queued work still runs). NULL, destroyed and
/// unknown handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_sm_stream_destroy(stream: *mut OrdoSmStream) {
    guard_void("ordo_sm_stream_destroy", || drop(handles::remove::<StreamObject, _>(stream)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE, ORDO_SUCCESS};

    #[test]
    fn bad_arguments_are_refused_before_cuda() {
        let mut out = [core::ptr::null_mut::<OrdoSmPartition>(); 2];
        let groups = [1usize, 1];
        // SAFETY: valid pointers; each call is refused before it reads them.
        unsafe {
            let create = |device, remainder, count, out: *mut *mut OrdoSmPartition| {
                ordo_sm_partitions_create(device, 16, groups.as_ptr(), count, remainder, out)
            };
            assert_eq!(create(0, 7, 2, out.as_mut_ptr()), ORDO_ERROR_INVALID_ARGUMENT, "unknown remainder");
            assert_eq!(create(-1, ORDO_SM_REMAINDER_UNUSED, 2, out.as_mut_ptr()), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(create(0, ORDO_SM_REMAINDER_UNUSED, 2, core::ptr::null_mut()), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(create(0, ORDO_SM_REMAINDER_UNUSED, 5000, out.as_mut_ptr()), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(
                ordo_sm_partitions_create(0, 16, core::ptr::null(), 2, 0, out.as_mut_ptr()),
                ORDO_ERROR_INVALID_ARGUMENT,
                "null groups"
            );
            let mut n = 0u32;
            assert_eq!(ordo_sm_split_query(0, 16, &mut n, core::ptr::null_mut(), &mut n), ORDO_ERROR_INVALID_ARGUMENT);
            let mut sm = 0u32;
            assert_eq!(ordo_sm_partition_sm_count(0x1b as *mut OrdoSmPartition, &mut sm), ORDO_ERROR_INVALID_HANDLE);
            let mut s = core::ptr::null_mut::<OrdoSmStream>();
            assert_eq!(ordo_sm_stream_create(core::ptr::null_mut(), 0, &mut s), ORDO_ERROR_INVALID_HANDLE);
            let mut raw: sys::cudaStream_t = core::ptr::null_mut();
            assert_eq!(ordo_sm_stream_handle(core::ptr::null_mut(), &mut raw), ORDO_ERROR_INVALID_HANDLE);
        }
        assert!(out.iter().all(|p| p.is_null()), "nothing written on a refusal");
        ordo_sm_partition_destroy(core::ptr::null_mut());
        ordo_sm_stream_destroy(0x2b as *mut OrdoSmStream);
    }

    /// With no driver the split fails with CUDA's status and a last error that says why.
    #[test]
    fn without_a_driver_the_split_reports_cudas_status() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a machine with a driver: the GPU tests cover it
        }
        let mut out = [core::ptr::null_mut::<OrdoSmPartition>(); 2];
        // SAFETY: valid pointers.
        let status = unsafe { ordo_sm_partitions_create(0, 16, [1usize, 1].as_ptr(), 2, 1, out.as_mut_ptr()) };
        assert!(status > 0 && status != ORDO_SUCCESS, "CUDA's code: {status}");
        let mut buf = [0 as core::ffi::c_char; 512];
        // SAFETY: 512 writable bytes.
        unsafe { crate::last_error::ordo_last_error_message(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by ordo_last_error_message.
        let message = unsafe { core::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
        assert!(message.contains("driver"), "{message}");
    }
}
