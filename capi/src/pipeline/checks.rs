//! The pipeline exports' checks of sizes, alignment and overlap, made before anything reaches CUDA.

use crate::check::byte_len;
use crate::status::{invalid, Outcome};
use core::ffi::c_void;

/// The alignment pointers of `element_size`-byte elements must have: the largest power of two
/// dividing it, at most 16.
pub(super) fn element_align(element_size: usize) -> usize {
    (1usize << element_size.trailing_zeros().min(4)).max(1)
}

/// The bytes of `rows` input rows of `in_row_bytes` and output rows of `out_row_bytes`, refused
/// before CUDA for a zero row size, zero rows, and byte counts that overflow or pass `isize::MAX`.
pub(super) fn stencil_bytes(rows: usize, in_row_bytes: usize, out_row_bytes: usize) -> Outcome<(usize, usize)> {
    if in_row_bytes == 0 {
        return Err(invalid("in_row_bytes", "zero bytes a row"));
    }
    if out_row_bytes == 0 {
        return Err(invalid("out_row_bytes", "zero bytes a row"));
    }
    if rows == 0 {
        return Err(invalid("rows", "zero rows"));
    }
    let bytes = |row: usize| rows.checked_mul(row).ok_or_else(|| invalid("rows", "rows * row bytes overflows"));
    Ok((byte_len::<u8>(bytes(in_row_bytes)?, "rows")?, byte_len::<u8>(bytes(out_row_bytes)?, "rows")?))
}

/// Whether `a_len` bytes at `a` and `b_len` bytes at `b` share a byte (a range that would pass the
/// end of the address space is taken to reach it).
fn overlap(a: *const c_void, a_len: usize, b: *const c_void, b_len: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    a_len != 0 && b_len != 0 && a < b.saturating_add(b_len) && b < a.saturating_add(a_len)
}

/// Refuses a run's input buffer that partly overlaps its output buffer (host or device). One buffer
/// given as both is a run in place, which is sound: a chunk's bytes are copied out (and, on the
/// device, written by its compute) only after they were copied in, and chunks share no byte. A
/// shifted overlap is not: a later chunk's copy in would race an earlier chunk's copy out or
/// compute.
pub(super) fn same_or_disjoint(host: [*const c_void; 2], dev: [*const c_void; 2], bytes: usize) -> Outcome {
    if host[0] != host[1] && overlap(host[0], bytes, host[1], bytes) {
        return Err(invalid("host_out", "host_in and host_out overlap without being the same buffer"));
    }
    if !dev[0].is_null() && !dev[1].is_null() && dev[0] != dev[1] && overlap(dev[0], bytes, dev[1], bytes) {
        return Err(invalid("dev_out", "dev_in and dev_out overlap without being the same buffer"));
    }
    Ok(())
}

/// Refuses a stencil's input buffer that overlaps its output buffer (host or device): the computes
/// of neighbouring chunks read input rows while others write output rows and copies run both ways,
/// so shared bytes race (and the views ordo makes of them must not alias).
pub(super) fn stencil_disjoint(
    host: [*const c_void; 2],
    dev: [*const c_void; 2],
    in_bytes: usize,
    out_bytes: usize,
) -> Outcome {
    if overlap(host[0], in_bytes, host[1], out_bytes) {
        return Err(invalid("host_out", "host_in and host_out overlap"));
    }
    if !dev[0].is_null() && !dev[1].is_null() && overlap(dev[0], in_bytes, dev[1], out_bytes) {
        return Err(invalid("dev_out", "dev_in and dev_out overlap"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_alignment_is_the_largest_power_of_two_dividing_the_size_up_to_16() {
        assert_eq!(element_align(1), 1);
        assert_eq!(element_align(4), 4);
        assert_eq!(element_align(12), 4);
        assert_eq!(element_align(48), 16);
        assert_eq!(element_align(3), 1);
    }

    #[test]
    fn overlapping_buffers_are_refused_before_cuda() {
        let at = |a: usize| a as *const c_void;
        assert!(!overlap(at(0x1000), 0x100, at(0x1100), 0x100), "adjacent");
        assert!(!overlap(at(0x1100), 0x100, at(0x1000), 0x100), "adjacent, the other way");
        assert!(overlap(at(0x1000), 0x101, at(0x1100), 0x100), "one byte shared");
        assert!(overlap(at(0x1000), 0x100, at(0x1000), 0x100), "in place");
        assert!(overlap(at(0x1000), 0x1000, at(0x1800), 0x10), "inside");
        assert!(overlap(at(usize::MAX - 4), 0x100, at(usize::MAX - 1), 1), "to the end of the address space");
        assert!(!overlap(at(0x1000), 0, at(0x1000), 0x100), "nothing shared by an empty range");
        let (hi, ho, di, d_o) = (at(0x10_0000), at(0x20_0000), at(0x30_0000), at(0x40_0000));
        assert_eq!(stencil_disjoint([hi, ho], [di, d_o], 0x1000, 0x1000), Ok(()));
        // A run (not a stencil) may also work in place, but not on a shifted overlap.
        assert_eq!(same_or_disjoint([hi, hi], [di, di], 0x1000), Ok(()), "in place");
        assert_eq!(same_or_disjoint([hi, ho], [di, d_o], 0x1000), Ok(()), "disjoint");
        assert_eq!(same_or_disjoint([hi, ho], [core::ptr::null(), di], 0x1000), Ok(()), "a temporary");
        assert!(same_or_disjoint([hi, at(hi as usize + 1)], [di, d_o], 0x1000).is_err(), "host shifted by one");
        assert!(same_or_disjoint([hi, ho], [at(d_o as usize + 8), d_o], 0x1000).is_err(), "device shifted");
        assert_eq!(stencil_disjoint([hi, ho], [core::ptr::null(), core::ptr::null()], 0x1000, 0x1000), Ok(()));
        // In place on the device (the same rows in and out): a halo reads rows another chunk writes.
        assert!(stencil_disjoint([hi, ho], [di, di], 0x1000, 0x1000).is_err());
        // An output longer than its input's distance to it on the host.
        assert!(stencil_disjoint([hi, at(0x10_0800)], [di, d_o], 0x1000, 0x800).is_err());
        assert!(stencil_disjoint([ho, hi], [di, d_o], 0x1000, 0x10_0001).is_err());
        assert_eq!(stencil_disjoint([ho, hi], [di, d_o], 0x1000, 0x10_0000), Ok(()));
    }

    #[test]
    fn stencil_sizes_are_checked_before_cuda() {
        assert_eq!(stencil_bytes(10, 64, 128), Ok((640, 1280)));
        for (rows, i, o) in [
            (0, 64, 32),
            (10, 0, 32),
            (10, 64, 0),
            (usize::MAX, 2, 1),
            (2, 1, usize::MAX),
            (isize::MAX as usize / 4 + 1, 4, 4),
        ] {
            assert!(stencil_bytes(rows, i, o).is_err(), "rows {rows}, {i} and {o} bytes a row");
        }
    }
}
