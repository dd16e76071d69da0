//! The element types NCCL reduces and moves (a sealed trait), the half-precision types as bits,
//! and the reduction operations: the one table of NCCL's values and the Rust types they stand for
//! (`nccl_types!` below), which the C ABI's dispatch uses too ([`DataType::dispatch`]).

use core::ffi::c_int;
use ordo_cuda_core::DeviceCopy;

/// NCCL's element types (`ncclDataType_t`), by NCCL's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DataType {
    /// `ncclInt8`.
    I8 = 0,
    /// `ncclUint8`.
    U8 = 1,
    /// `ncclInt32`.
    I32 = 2,
    /// `ncclUint32`.
    U32 = 3,
    /// `ncclInt64`.
    I64 = 4,
    /// `ncclUint64`.
    U64 = 5,
    /// `ncclFloat16`.
    F16 = 6,
    /// `ncclFloat32`.
    F32 = 7,
    /// `ncclFloat64`.
    F64 = 8,
    /// `ncclBfloat16` (NCCL 2.10 and later, built with CUDA 11 or later).
    Bf16 = 9,
}

impl DataType {
    /// NCCL's value.
    #[inline(always)]
    pub const fn raw(self) -> c_int {
        self as c_int
    }

    /// The type of NCCL's value `raw`, or `None` for a value NCCL does not define.
    pub fn from_raw(raw: c_int) -> Option<DataType> {
        DataType::ALL.into_iter().find(|d| d.raw() == raw)
    }

    /// Bytes of one element.
    pub const fn size(self) -> usize {
        match self {
            DataType::I8 | DataType::U8 => 1,
            DataType::F16 | DataType::Bf16 => 2,
            DataType::I32 | DataType::U32 | DataType::F32 => 4,
            DataType::I64 | DataType::U64 | DataType::F64 => 8,
        }
    }
}

/// Reductions (`ncclRedOp_t`), by NCCL's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum = 0,
    /// `ncclProd`.
    Prod = 1,
    /// `ncclMax`.
    Max = 2,
    /// `ncclMin`.
    Min = 3,
    /// `ncclAvg` (NCCL 2.10 and later): the sum divided by the number of ranks.
    Avg = 4,
}

impl ReduceOp {
    /// Every operation, in NCCL's order.
    pub const ALL: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];

    /// NCCL's value.
    #[inline(always)]
    pub const fn raw(self) -> c_int {
        self as c_int
    }

    /// The operation of NCCL's value `raw`, or `None` for a value NCCL does not define here (a
    /// user-defined operation among them).
    pub fn from_raw(raw: c_int) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|op| op.raw() == raw)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL knows. Sealed: NCCL's set of types is fixed.
pub trait NcclType: DeviceCopy + sealed::Sealed {
    /// NCCL's type.
    const DATA_TYPE: DataType;
}

/// Code generic over NCCL's element types, run for the Rust type a [`DataType`] stands for
/// ([`DataType::dispatch`]): how a value that names its type at run time (a C caller's `dtype`)
/// reaches a typed call.
pub trait ForEachType {
    /// What the code returns.
    type Output;
    /// Runs the code for `T`.
    fn run<T: NcclType>(self) -> Self::Output;
}

/// The table: each Rust type and the [`DataType`] it is. It writes the `NcclType` impls,
/// [`DataType::ALL`] and [`DataType::dispatch`] from one list, so they cannot disagree (the match
/// in `dispatch` must name every variant).
macro_rules! nccl_types {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl NcclType for $t {
                const DATA_TYPE: DataType = DataType::$d;
            }
        )*

        impl DataType {
            /// Every element type, in NCCL's order.
            pub const ALL: [DataType; [$(DataType::$d),*].len()] = [$(DataType::$d),*];

            /// Runs `code` for the Rust type this element type stands for.
            pub fn dispatch<C: ForEachType>(self, code: C) -> C::Output {
                match self {
                    $(DataType::$d => code.run::<$t>(),)*
                }
            }
        }
    };
}

/// An IEEE half-precision number (`__half`), as its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 number (`__nv_bfloat16`), as its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Bf16(pub u16);

// SAFETY: one u16; every bit pattern is a value.
unsafe impl DeviceCopy for F16 {}
// SAFETY: as above.
unsafe impl DeviceCopy for Bf16 {}

nccl_types!(i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64, F16 => F16, f32 => F32, f64 => F64, Bf16 => Bf16);

/// Rounds away the low `shift` bits of `m` to the nearest, ties to even.
fn round_shift(m: u32, shift: u32) -> u32 {
    let r = m >> shift;
    let rem = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rem > half || (rem == half && r & 1 == 1) {
        r + 1
    } else {
        r
    }
}

impl F16 {
    /// The nearest half to `v` (ties to even; beyond the range: infinity; NaN stays NaN).
    pub fn from_f32(v: f32) -> F16 {
        let x = v.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x7f_ffff;
        if exp == 0xff {
            return F16(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            if e < -10 {
                return F16(sign);
            }
            // A subnormal half: the mantissa with its leading bit, in units of 2^-24.
            return F16(sign | round_shift(man | 0x80_0000, (14 - e) as u32) as u16);
        }
        // The carry of the rounding may reach the exponent: that is the right result (up to
        // infinity).
        F16(sign | round_shift(((e as u32) << 23) | man, 13) as u16)
    }

    /// The exact value as `f32`.
    pub fn to_f32(self) -> f32 {
        let h = u32::from(self.0);
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        match exp {
            0 => {
                let v = man as f32 / 16_777_216.0; // 2^-24 a unit: exact
                if sign != 0 {
                    -v
                } else {
                    v
                }
            }
            0x1f => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
            _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
        }
    }
}

impl Bf16 {
    /// The nearest bfloat16 to `v` (ties to even; NaN stays NaN).
    pub fn from_f32(v: f32) -> Bf16 {
        let x = v.to_bits();
        if v.is_nan() {
            return Bf16(((x >> 16) | 0x40) as u16);
        }
        // Rounding of the low 16 bits; a carry into the exponent is the right result.
        Bf16(((x as u64 + 0x7fff + ((x as u64 >> 16) & 1)) >> 16) as u16)
    }

    /// The exact value as `f32`.
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_trip_and_round_to_nearest_even() {
        for i in -2048i32..=2048 {
            let v = i as f32;
            assert_eq!(F16::from_f32(v).to_f32(), v, "{v} is a half");
        }
        for i in -256i32..=256 {
            let v = i as f32 / 16.0; // 8 significant bits at most
            assert_eq!(Bf16::from_f32(v).to_f32(), v, "{v} is a bfloat16");
        }
        assert_eq!(Bf16::from_f32(257.0).to_f32(), 256.0, "tie to even");
        assert_eq!(F16::from_f32(1.0).0, 0x3c00);
        assert_eq!(F16::from_f32(-2.0).0, 0xc000);
        assert_eq!(F16::from_f32(65504.0).0, 0x7bff);
        assert_eq!(F16::from_f32(65520.0).0, 0x7c00, "rounds up to infinity");
        assert_eq!(F16::from_f32(2049.0).to_f32(), 2048.0, "tie to even");
        assert_eq!(F16::from_f32(2051.0).to_f32(), 2052.0, "tie to even");
        assert_eq!(F16::from_f32(5.960_464_5e-8).0, 0x0001, "smallest subnormal");
        assert_eq!(F16(0x0001).to_f32(), 5.960_464_5e-8);
        assert_eq!(F16(0x03ff).to_f32(), 6.097_555e-5);
        assert_eq!(F16::from_f32(6.097_555e-5).0, 0x03ff);
        assert_eq!(F16::from_f32(1e-9).0, 0);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(F16::from_f32(f32::NEG_INFINITY).to_f32(), f32::NEG_INFINITY);
        assert_eq!(Bf16::from_f32(1.0).0, 0x3f80);
        assert_eq!(Bf16::from_f32(f32::from_bits(0x3f80_8000)).0, 0x3f80, "tie to even, down");
        assert_eq!(Bf16::from_f32(f32::from_bits(0x3f81_8000)).0, 0x3f82, "tie to even, up");
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(Bf16::from_f32(f32::MAX).to_f32(), f32::INFINITY);
    }

    #[test]
    fn data_types_are_nccls_values() {
        assert_eq!(<f32 as NcclType>::DATA_TYPE.raw(), 7);
        assert_eq!(<F16 as NcclType>::DATA_TYPE.raw(), 6);
        assert_eq!(<Bf16 as NcclType>::DATA_TYPE.raw(), 9);
        assert_eq!(<u8 as NcclType>::DATA_TYPE.raw(), 1);
        assert_eq!(<i64 as NcclType>::DATA_TYPE.raw(), 4);
        assert_eq!(<f64 as NcclType>::DATA_TYPE.size(), 8);
        assert_eq!(ReduceOp::Avg.raw(), 4);
        assert_eq!(ReduceOp::Min.raw(), 3);
    }

    #[test]
    fn raw_values_come_back_as_their_types_and_dispatch_to_them() {
        struct Size;
        impl ForEachType for Size {
            type Output = (usize, DataType);
            fn run<T: NcclType>(self) -> (usize, DataType) {
                (core::mem::size_of::<T>(), T::DATA_TYPE)
            }
        }
        for (i, d) in DataType::ALL.into_iter().enumerate() {
            assert_eq!(d.raw(), i as c_int, "NCCL's values run 0..");
            assert_eq!(DataType::from_raw(d.raw()), Some(d));
            assert_eq!(d.dispatch(Size), (d.size(), d), "{d:?}");
        }
        assert_eq!(DataType::ALL.len(), 10);
        for raw in [-1, 10, c_int::MAX, c_int::MIN] {
            assert_eq!(DataType::from_raw(raw), None);
        }
        for op in ReduceOp::ALL {
            assert_eq!(ReduceOp::from_raw(op.raw()), Some(op));
        }
        assert_eq!(ReduceOp::from_raw(5), None);
        assert_eq!(ReduceOp::from_raw(-1), None);
    }
}
