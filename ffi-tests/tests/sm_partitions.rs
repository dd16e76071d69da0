//! SM partitions through the C ABI (`ordo_sm_*`): the split a query reports is the one partitions
//! are made of; partitions' SM counts add up to the split; a partition's stream takes CUDA's own
//! calls; destroying the partition handle first leaves its stream working; plans the split cannot
//! meet are refused before any partition is made, with the reason in the last error; a graph
//! cache's graphs captured on a partition's stream keep the partition, and replay after it and its
//! streams are destroyed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::{c_char, c_void, CStr};
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{sys, DeviceBuffer, DeviceSliceMut, Stream, StreamRef};

fn last_message() -> String {
    let mut buf = vec![0 as c_char; 1024];
    // SAFETY: 1024 writable bytes.
    unsafe { ordo_last_error_message(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by ordo_last_error_message.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

fn ok(status: OrdoStatus) {
    assert_eq!(status, ORDO_SUCCESS, "{}", last_message());
}

fn cuda(code: sys::cudaError_t) {
    assert_eq!(code, sys::cudaError::cudaSuccess);
}

/// Fills 1 MiB with `value` on `stream` (cudaMallocAsync, cudaMemsetAsync, a copy to pinned host
/// memory, cudaFreeAsync) and checks it on the host.
fn fill_and_check(stream: sys::cudaStream_t, value: u8) {
    const BYTES: usize = 1 << 20;
    let (mut dev, mut host): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
    // SAFETY: plain CUDA calls on a live stream, each buffer used within its allocation.
    unsafe {
        cuda(sys::cudaMallocHost(&mut host, BYTES));
        cuda(sys::cudaMallocAsync(&mut dev, BYTES, stream));
        cuda(sys::cudaMemsetAsync(dev, i32::from(value), BYTES, stream));
        cuda(sys::cudaMemcpyAsync(host, dev, BYTES, sys::cudaMemcpyKind::cudaMemcpyDeviceToHost, stream));
        cuda(sys::cudaFreeAsync(dev, stream));
        cuda(sys::cudaStreamSynchronize(stream));
        let bytes = core::slice::from_raw_parts(host.cast::<u8>(), BYTES);
        assert!(bytes.iter().all(|&b| b == value), "the partition stream's copy");
        cuda(sys::cudaFreeHost(host));
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn partitions_streams_and_refusals_through_the_c_abi() {
    let (mut groups, mut per, mut rest) = (0u32, 0u32, 0u32);
    // SAFETY: writable outs.
    ok(unsafe { ordo_sm_split_query(0, 16, &mut groups, &mut per, &mut rest) });
    println!("split by 16: {groups} groups of {per} SMs, {rest} left over");
    assert!(groups >= 2 && per >= 16, "{groups} x {per}");

    let counts = [1usize, groups as usize - 1];
    let mut parts = [null_mut::<OrdoSmPartition>(); 2];
    // SAFETY: two counts, two writable handles.
    ok(unsafe { ordo_sm_partitions_create(0, 16, counts.as_ptr(), 2, ORDO_SM_REMAINDER_TO_LAST, parts.as_mut_ptr()) });
    let (mut a, mut b) = (0u32, 0u32);
    // SAFETY: live handles, writable outs.
    unsafe {
        ok(ordo_sm_partition_sm_count(parts[0], &mut a));
        ok(ordo_sm_partition_sm_count(parts[1], &mut b));
    }
    assert_eq!((a, a + b), (per, groups * per + rest), "one group; the rest of the split");

    let mut stream = null_mut::<OrdoSmStream>();
    let mut raw: sys::cudaStream_t = null_mut();
    // SAFETY: a live handle; writable outs.
    unsafe {
        ok(ordo_sm_stream_create(parts[0], 0, &mut stream));
        ok(ordo_sm_stream_handle(stream, &mut raw));
    }
    assert!(!raw.is_null());
    fill_and_check(raw, 0x5a);
    // The partition's handle goes first; the stream keeps the partition.
    ordo_sm_partition_destroy(parts[0]);
    let mut gone = 0u32;
    // SAFETY: a destroyed handle is only looked up.
    assert_eq!(unsafe { ordo_sm_partition_sm_count(parts[0], &mut gone) }, ORDO_ERROR_INVALID_HANDLE);
    fill_and_check(raw, 0xa5);
    ordo_sm_stream_destroy(stream);
    ordo_sm_stream_destroy(stream); // twice: harmless
    ordo_sm_partition_destroy(parts[1]);

    // The SMs left over as a partition of their own: count + 1 handles.
    if rest > 0 {
        let mut three = [null_mut::<OrdoSmPartition>(); 3];
        let counts = [1usize, 1];
        // SAFETY: two counts, three writable handles.
        ok(unsafe { ordo_sm_partitions_create(0, 16, counts.as_ptr(), 2, ORDO_SM_REMAINDER_OWN, three.as_mut_ptr()) });
        let mut own = 0u32;
        // SAFETY: a live handle, a writable out.
        ok(unsafe { ordo_sm_partition_sm_count(three[2], &mut own) });
        assert_eq!(own, rest);
        three.into_iter().for_each(|p| ordo_sm_partition_destroy(p));
    }

    // More groups than the split made: refused, nothing written.
    let mut none = [null_mut::<OrdoSmPartition>(); 2];
    let too_many = [groups as usize, 1];
    // SAFETY: two counts, two writable handles.
    let st =
        unsafe { ordo_sm_partitions_create(0, 16, too_many.as_ptr(), 2, ORDO_SM_REMAINDER_UNUSED, none.as_mut_ptr()) };
    assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("more groups"), "{}", last_message());
    assert!(none.iter().all(|p| p.is_null()));
    let mut priority_out = null_mut::<OrdoSmStream>();
    // SAFETY: a destroyed handle is only looked up.
    assert_eq!(unsafe { ordo_sm_stream_create(parts[1], 0, &mut priority_out) }, ORDO_ERROR_INVALID_HANDLE);
}

/// The graph cache's buffer: `x`, of the largest bucket's length.
struct Buffer {
    x: *mut f32,
}

/// `x[i] += 1` over the bucket's first elements of the user's buffer (ordo's `add_one` kernel).
unsafe extern "C" fn add_one_body(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus {
    let b = unsafe { &*user.cast::<Buffer>() };
    let Some(s) = (unsafe { StreamRef::from_raw(stream) }) else { return ORDO_ERROR_INVALID_ARGUMENT };
    match unsafe { ordo_cuda_kernels::add_one(s, DeviceSliceMut::from_raw_parts(b.x, bucket)) } {
        Ok(()) => ORDO_SUCCESS,
        Err(e) => e.cuda_code().map_or(ORDO_ERROR_LIBRARY, |c| c.0 as OrdoStatus),
    }
}

/// A C graph cache captures every bucket on a partition's stream (`ordo_graph_cache_capture_all`),
/// then the stream and every partition handle are destroyed; the cache's graphs still replay, on a
/// plain stream, and `x` (nonzero data) holds what the CPU computes: its graphs hold the partition.
/// Before graphs held their partition, the last destroy destroyed the green context under them.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_graph_cache_keeps_the_partition_it_captured_on() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let (mut groups, mut per, mut rest) = (0u32, 0u32, 0u32);
    // SAFETY: writable outs.
    ok(unsafe { ordo_sm_split_query(0, 16, &mut groups, &mut per, &mut rest) });
    let counts = [1usize, groups as usize - 1];
    let mut parts = [null_mut::<OrdoSmPartition>(); 2];
    // SAFETY: two counts, two writable handles.
    ok(unsafe { ordo_sm_partitions_create(0, 16, counts.as_ptr(), 2, ORDO_SM_REMAINDER_TO_LAST, parts.as_mut_ptr()) });
    let mut stream = null_mut::<OrdoSmStream>();
    let mut raw: sys::cudaStream_t = null_mut();
    // SAFETY: a live handle; writable outs.
    unsafe {
        ok(ordo_sm_stream_create(parts[0], 0, &mut stream));
        ok(ordo_sm_stream_handle(stream, &mut raw));
    }

    const BUCKETS: [usize; 3] = [1000, 4000, 16_000];
    let plain = Stream::new().unwrap();
    let p = plain.as_stream();
    let data: Vec<f32> = (0..BUCKETS[2]).map(|i| (i % 509) as f32 * 0.25 - 60.375).collect();
    let mut x = DeviceBuffer::<f32>::alloc_async(BUCKETS[2], p).unwrap();
    copy::h2d_blocking(x.as_mut_slice(), &data, p).unwrap();
    let mut user = Buffer { x: x.as_mut_ptr() };
    let mut cache = null_mut();
    // SAFETY: three buckets; `user` and `x` outlive the cache (destroyed below, after a
    // synchronise of the stream its graphs replayed on); `cache` is writable.
    ok(unsafe {
        ordo_graph_cache_create(
            BUCKETS.as_ptr(),
            3,
            0,
            Some(add_one_body),
            (&mut user as *mut Buffer).cast(),
            &mut cache,
        )
    });
    // SAFETY: live handles.
    ok(unsafe { ordo_graph_cache_capture_all(cache, raw) });
    cuda(unsafe { sys::cudaStreamSynchronize(raw) });

    // Every handle of both partitions goes, the partition's stream first.
    ordo_sm_stream_destroy(stream);
    ordo_sm_partition_destroy(parts[0]);
    ordo_sm_partition_destroy(parts[1]);

    let sizes = [3000usize, 16_000, 1, 999, 12_345];
    let mut bucket = 0usize;
    for n in sizes {
        // SAFETY: live handles; `bucket` is writable.
        ok(unsafe { ordo_graph_cache_run(cache, p.as_raw(), n, &mut bucket) });
        assert!(bucket >= n && BUCKETS.contains(&bucket));
    }
    let mut got = vec![0f32; BUCKETS[2]];
    copy::d2h_blocking(&mut got, x.as_slice(), p).unwrap();
    let want: Vec<f32> = data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let replays = sizes.iter().filter(|&&n| i < BUCKETS[BUCKETS.partition_point(|&b| b < n)]).count();
            v + replays as f32
        })
        .collect();
    assert!(got == want, "the cache's graphs, replayed after their partition was destroyed");
    ordo_graph_cache_destroy(cache);
    drop(x);
    plain.synchronize().unwrap();
}
