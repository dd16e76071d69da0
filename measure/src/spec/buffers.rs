//! The device buffers a point of the sweep needs: their sizes, computed without overflow, and
//! whether they fit in the device's memory. The check takes the device's numbers
//! (`cudaMemGetInfo`'s free and total) as arguments, so that it runs, and is tested, without a
//! GPU; the command runs it for every point before it measures anything, and again before each
//! point allocates.

use super::args::{ArgSpec, ElemType};
use super::expr::Expr;
use super::{KernelSpec, SpecError};

/// The most bytes a buffer may have: a size that fits in `isize`, as Rust's and CUDA's pointer
/// arithmetic needs (no device comes near it; sizes past it are a mistake in the expression).
pub const MAX_BYTES: u64 = i64::MAX as u64;

/// Bytes of `len` elements of `ty`: an error for a count below one, or a size past [`MAX_BYTES`]
/// (`n=2^62` of `f32` is 2^64 bytes).
pub fn buffer_bytes(ty: ElemType, len: i64) -> Result<u64, SpecError> {
    let n = u64::try_from(len)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| SpecError::new(format!("a buffer of {len} elements (at least one is needed)")))?;
    let size = ty.size() as u64;
    n.checked_mul(size).filter(|&b| b <= MAX_BYTES).ok_or_else(|| {
        SpecError::new(format!("{len} elements of {} ({size} bytes each) are more than 2^63-1 bytes", ty.name()))
    })
}

/// One buffer a point allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedBuffer {
    /// The kernel whose argument it is.
    pub kernel: String,
    /// Its argument's position (from 0).
    pub argument: usize,
    /// Its name, when it has one (`x:f32[n]`).
    pub name: Option<String>,
    /// Its element type.
    pub ty: ElemType,
    /// Its size as written (`n/2`).
    pub len: String,
    /// Its elements at the point.
    pub elements: u64,
    /// Its bytes at the point.
    pub bytes: u64,
}

impl PlannedBuffer {
    /// How a message names it: `kernel step, argument 0 (x:f32[n/2])`.
    pub fn label(&self) -> String {
        let name = self.name.as_deref().map(|n| format!("{n}:")).unwrap_or_default();
        format!("kernel {}, argument {} ({name}{}[{}])", self.kernel, self.argument, self.ty.name(), self.len)
    }
}

/// The buffers `kernels` allocate at the point whose axis values `var` gives, in order (a `@name`
/// allocates nothing). Each is written with its size's text ([`PlannedBuffer::len`]), for the
/// messages that name it: for the engine, which calls this once for each point it checks or
/// measures; the command line's check of every point is [`check_at`], which writes nothing.
pub fn at_point(kernels: &[KernelSpec], var: &dyn Fn(&str) -> Option<i64>) -> Result<Vec<PlannedBuffer>, SpecError> {
    let mut out = Vec::new();
    each_buffer(kernels, var, |b| {
        out.push(PlannedBuffer {
            kernel: b.kernel.name.clone(),
            argument: b.argument,
            name: b.name.clone(),
            ty: b.ty,
            len: b.len.to_string(),
            elements: b.elements,
            bytes: b.bytes,
        });
    })?;
    Ok(out)
}

/// Whether the buffers of `kernels` have sizes at the point whose axis values `var` gives: the
/// checks of [`at_point`] (a count of at least one, a size below [`MAX_BYTES`], an expression that
/// evaluates), with no list made and no text written but an error's, so that checking a sweep of
/// 100,000 points costs the evaluations alone.
pub fn check_at(kernels: &[KernelSpec], var: &dyn Fn(&str) -> Option<i64>) -> Result<(), SpecError> {
    each_buffer(kernels, var, |_| {})
}

/// One buffer of a kernel at a point, as [`each_buffer`] finds it.
struct Found<'k> {
    kernel: &'k KernelSpec,
    argument: usize,
    name: &'k Option<String>,
    ty: ElemType,
    len: &'k Expr,
    elements: u64,
    bytes: u64,
}

/// Calls `each` with every buffer of `kernels` at the point, in order; the first buffer whose size
/// is wrong is the error, which names it (`kernel step, argument 1 (f32[n/2]): ...`, written only
/// then).
fn each_buffer<'k>(
    kernels: &'k [KernelSpec],
    var: &dyn Fn(&str) -> Option<i64>,
    mut each: impl FnMut(Found<'k>),
) -> Result<(), SpecError> {
    for kernel in kernels {
        for (argument, a) in kernel.args.iter().enumerate() {
            if let ArgSpec::Buffer { name, ty, len, .. } = a {
                let at = |e: SpecError| {
                    SpecError::new(format!("kernel {}, argument {argument} ({}[{len}]): {e}", kernel.name, ty.name()))
                };
                let elements = len.eval(var).map_err(at)?;
                let bytes = buffer_bytes(*ty, elements).map_err(at)?;
                each(Found { kernel, argument, name, ty: *ty, len, elements: elements.unsigned_abs(), bytes });
            }
        }
    }
    Ok(())
}

/// `bytes` for a message: `160.0 GiB (171798691840 bytes)`.
pub fn show_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
}

/// Whether `buffers` fit in a device with `free` of `total` bytes (`cudaMemGetInfo`): each buffer
/// in the device's memory, each in what is free, and all of them together in what is free. The
/// error names the buffer (or the largest, for the sum), its size, and the device's memory.
pub fn check_fits(buffers: &[PlannedBuffer], free: u64, total: u64) -> Result<(), SpecError> {
    let device = format!("the device has {} of memory, {} free", show_bytes(total), show_bytes(free));
    for b in buffers {
        if b.bytes > total || b.bytes > free {
            let room = if b.bytes > total { "more than the device's whole memory" } else { "more than is free" };
            return Err(SpecError::new(format!(
                "{}: {} elements of {} are {}, {room}: {device}",
                b.label(),
                b.elements,
                b.ty.name(),
                show_bytes(b.bytes)
            )));
        }
    }
    let sum: u128 = buffers.iter().map(|b| u128::from(b.bytes)).sum();
    if sum > u128::from(free) {
        // The first of the largest (`max_by_key` keeps the last of equals).
        let largest = buffers
            .iter()
            .rev()
            .max_by_key(|b| b.bytes)
            .map(|b| format!(" (the largest: {}, {})", b.label(), show_bytes(b.bytes)));
        return Err(SpecError::new(format!(
            "the {} buffers need {} together{}, more than is free: {device}",
            buffers.len(),
            show_bytes(u64::try_from(sum).unwrap_or(u64::MAX)),
            largest.unwrap_or_default()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::args::ArgSpec;

    const GIB: u64 = 1 << 30;

    fn kernel(args: &[&str]) -> KernelSpec {
        let mut k = KernelSpec::new("step");
        k.args = args.iter().map(|a| ArgSpec::parse(a).unwrap()).collect();
        k
    }

    fn at(kernels: &[KernelSpec], n: i64) -> Result<Vec<PlannedBuffer>, SpecError> {
        at_point(kernels, &|v| (v == "n").then_some(n))
    }

    #[test]
    fn sizes_are_checked_for_overflow() {
        assert_eq!(buffer_bytes(ElemType::F32, 40 * GIB as i64).unwrap(), 160 * GIB);
        assert_eq!(buffer_bytes(ElemType::U8, i64::MAX).unwrap(), MAX_BYTES);
        for (ty, len) in
            [(ElemType::F32, 1i64 << 62), (ElemType::F32, 1 << 61), (ElemType::U16, i64::MAX), (ElemType::F64, 1 << 60)]
        {
            let e = buffer_bytes(ty, len).unwrap_err().to_string();
            assert!(e.contains("more than 2^63-1 bytes") && e.contains(&len.to_string()), "{e}");
        }
        assert!(buffer_bytes(ElemType::F32, 0).unwrap_err().to_string().contains("0 elements"));
        assert!(buffer_bytes(ElemType::F32, -4).is_err());
        let e = at(&[kernel(&["i32=n", "x:f32[n*4]"])], 1 << 62).unwrap_err().to_string();
        assert!(e.contains("integer overflow") && e.contains("argument 1"), "{e}");
        let e = at(&[kernel(&["f32[n]"])], 1 << 62).unwrap_err().to_string();
        assert!(e.contains("kernel step, argument 0") && e.contains("4611686018427387904 elements"), "{e}");
    }

    #[test]
    fn the_buffers_of_a_point_in_order() {
        let a = kernel(&["x:f32[n]=rand", "i32=n", "u8[n/2]", "stamps"]);
        let mut b = kernel(&["@x", "f64[3]"]);
        b.name = "other".into();
        let p = at(&[a, b], 5).unwrap();
        assert_eq!(p.iter().map(|b| (b.bytes, b.argument)).collect::<Vec<_>>(), vec![(20, 0), (3, 2), (24, 1)]);
        assert_eq!(p[0].label(), "kernel step, argument 0 (x:f32[n])");
        assert_eq!(p[1].label(), "kernel step, argument 2 (u8[n/2])");
        assert_eq!(p[2].label(), "kernel other, argument 1 (f64[3])");
    }

    #[test]
    fn a_buffer_larger_than_the_device_is_named_with_its_size_and_the_devices_memory() {
        // `-a n=40G --arg f32[n]` on an H200: 160 GiB against about 140.
        let (total, free) = (143_771_287_552u64, 142_000_000_000u64);
        let p = at(&[kernel(&["f32[n]=rand"])], 40 * GIB as i64).unwrap();
        let e = check_fits(&p, free, total).unwrap_err().to_string();
        for says in [
            "kernel step, argument 0 (f32[n])",
            "42949672960 elements of f32",
            "160.0 GiB (171798691840 bytes)",
            "more than the device's whole memory",
            "133.9 GiB (143771287552 bytes) of memory",
            "132.2 GiB (142000000000 bytes) free",
        ] {
            assert!(e.contains(says), "{e:?} should say {says:?}");
        }
    }

    #[test]
    fn buffers_that_fit_alone_but_not_in_what_is_free_or_together() {
        let (total, free) = (100 * GIB, 60 * GIB);
        let one = at(&[kernel(&["u8[n]"])], 70 * GIB as i64).unwrap();
        let e = check_fits(&one, free, total).unwrap_err().to_string();
        assert!(e.contains("more than is free") && e.contains("70.0 GiB"), "{e}");
        let two = at(&[kernel(&["u8[n]", "y:u8[n]"])], 40 * GIB as i64).unwrap();
        let e = check_fits(&two, free, total).unwrap_err().to_string();
        assert!(e.contains("the 2 buffers need 80.0 GiB") && e.contains("60.0 GiB (64424509440 bytes) free"), "{e}");
        assert!(e.contains("(the largest: kernel step, argument 0 (u8[n]), 40.0 GiB"), "{e}");
        assert!(check_fits(&two, 80 * GIB, total).is_ok(), "exactly what is free fits");
        assert!(check_fits(&[], 0, 0).is_ok());
        // Sums past 64 bits do not wrap into something that fits.
        let huge = at(&[kernel(&["u8[n]", "u8[n]", "u8[n]"])], i64::MAX).unwrap();
        assert!(check_fits(&huge, u64::MAX, u64::MAX).is_err());
    }

    /// The command line's check finds what `at_point` finds, with the same message.
    #[test]
    fn check_at_agrees_with_at_point() {
        let ks = [kernel(&["i32=n", "x:f32[n*4]", "u8[n-3]"])];
        for n in [1, 3, 4, 1 << 62] {
            let var = |v: &str| (v == "n").then_some(n);
            let (planned, checked) = (at_point(&ks, &var), check_at(&ks, &var));
            assert_eq!(planned.as_ref().err(), checked.as_ref().err(), "n={n}");
            assert_eq!(planned.is_ok(), checked.is_ok(), "n={n}");
        }
        assert!(check_at(&ks, &|v| (v == "n").then_some(3)).unwrap_err().to_string().contains("argument 2 (u8[n-3])"));
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(show_bytes(0), "0 bytes");
        assert_eq!(show_bytes(1023), "1023 bytes");
        assert_eq!(show_bytes(1536), "1.5 KiB (1536 bytes)");
        assert_eq!(show_bytes(160 * GIB), "160.0 GiB (171798691840 bytes)");
        assert_eq!(show_bytes(u64::MAX), "16.0 EiB (18446744073709551615 bytes)");
    }
}
