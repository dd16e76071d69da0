//! NCCL through the C ABI: a communicator handle made from a unique id, the collectives on the
//! caller's stream. The checks one call can make happen here (handles, pointers, sizes with
//! checked arithmetic, enum values); the logic is the Rust API's (`ordo_cuda_libs::nccl`). Element
//! types and operations are NCCL's own values (`ORDO_NCCL_*` in ordo.h), read through the Rust
//! API's one table (`DataType::from_raw`, `ReduceOp::from_raw`, `DataType::dispatch`).
//!
//! The communicator's exports are in `nccl/communicator.rs`, the five collectives in
//! `nccl/collectives.rs`, which share one path, a `Collective` trait and `collective`: the handle
//! lookup and its lock, the type dispatch, and the checks of every buffer; each collective states
//! only its lengths, which buffer may be NULL, and its Rust call.
//!
//! NCCL is reached through the feature `nccl` (on by default). Without it these exports still
//! exist, so that the ABI is the same in every build, and return `ORDO_ERROR_NOT_SUPPORTED` naming
//! the feature: each export's body is written once, in `with_nccl!`, whose other arm is the
//! feature-off twin.

use core::ffi::c_int;

/// The C handle type of a communicator: opaque, never dereferenced (see [`super::handles`]).
#[repr(C)]
pub struct OrdoNcclComm {
    _opaque: [u8; 0],
}

/// Element types, NCCL's own values (`ncclDataType_t`); the header's `ORDO_NCCL_*`.
pub const ORDO_NCCL_INT8: c_int = 0;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT8: c_int = 1;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_INT32: c_int = 2;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT32: c_int = 3;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_INT64: c_int = 4;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT64: c_int = 5;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT16: c_int = 6;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT32: c_int = 7;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT64: c_int = 8;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_BFLOAT16: c_int = 9;
/// Reductions, NCCL's own values (`ncclRedOp_t`).
pub const ORDO_NCCL_SUM: c_int = 0;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_PROD: c_int = 1;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_MAX: c_int = 2;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_MIN: c_int = 3;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_AVG: c_int = 4;
/// Bytes of a unique id.
pub const ORDO_NCCL_UNIQUE_ID_BYTES: usize = 128;

/// The body of an export that needs NCCL: `$body` with the feature; without it, the export's
/// arguments (`$arg`) unused and `ORDO_ERROR_NOT_SUPPORTED` naming the feature ([`unavailable`]).
/// The feature-off twins of the exports are this macro's second arm, written once.
macro_rules! with_nccl {
    ($export:literal, ($($arg:ident),*), $body:block) => {{
        #[cfg(feature = "nccl")]
        $body
        #[cfg(not(feature = "nccl"))]
        {
            let _ = ($($arg,)*);
            $crate::nccl::unavailable($export)
        }
    }};
}

mod collectives;
mod communicator;

pub use collectives::*;
pub use communicator::*;

/// An export's answer in a build without NCCL: `ORDO_ERROR_NOT_SUPPORTED`, naming the feature.
#[cfg(not(feature = "nccl"))]
pub(crate) fn unavailable(export: &'static str) -> crate::status::OrdoStatus {
    super::status::guard(export, || Err(super::status::missing_feature("nccl")))
}

#[cfg(all(test, feature = "nccl"))]
mod tests {
    use super::*;
    use ordo_cuda_libs::nccl::{DataType, ReduceOp, UniqueId};

    /// The header's `ORDO_NCCL_*` values are NCCL's, as the Rust API has them.
    #[test]
    fn header_values_are_nccls() {
        let header = include_str!("../../include/ordo.h");
        let value = |name: &str| -> i64 {
            let line = header
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name) && l.starts_with("#define"))
                .unwrap_or_else(|| panic!("{name} not in ordo.h"));
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        let types = [
            ("ORDO_NCCL_INT8", DataType::I8),
            ("ORDO_NCCL_UINT8", DataType::U8),
            ("ORDO_NCCL_INT32", DataType::I32),
            ("ORDO_NCCL_UINT32", DataType::U32),
            ("ORDO_NCCL_INT64", DataType::I64),
            ("ORDO_NCCL_UINT64", DataType::U64),
            ("ORDO_NCCL_FLOAT16", DataType::F16),
            ("ORDO_NCCL_FLOAT32", DataType::F32),
            ("ORDO_NCCL_FLOAT64", DataType::F64),
            ("ORDO_NCCL_BFLOAT16", DataType::Bf16),
        ];
        for (name, t) in types {
            assert_eq!(value(name), i64::from(t.raw()), "{name}");
        }
        let ops = [
            ("ORDO_NCCL_SUM", ReduceOp::Sum),
            ("ORDO_NCCL_PROD", ReduceOp::Prod),
            ("ORDO_NCCL_MAX", ReduceOp::Max),
            ("ORDO_NCCL_MIN", ReduceOp::Min),
            ("ORDO_NCCL_AVG", ReduceOp::Avg),
        ];
        for (name, op) in ops {
            assert_eq!(value(name), i64::from(op.raw()), "{name}");
            assert_eq!(collectives::imp::op_of(op.raw()).unwrap(), op);
        }
        assert_eq!(value("ORDO_NCCL_UNIQUE_ID_BYTES"), UniqueId::BYTES as i64);
        assert_eq!(ORDO_NCCL_UNIQUE_ID_BYTES, UniqueId::BYTES);
        assert!(collectives::imp::op_of(5).is_err() && collectives::imp::op_of(-1).is_err());
    }
}

#[cfg(all(test, not(feature = "nccl")))]
mod tests {
    use super::*;
    use crate::status::{OrdoStatus, ORDO_ERROR_NOT_SUPPORTED};
    use core::ffi::c_void;
    use ordo_cuda_core::sys;

    /// Built without NCCL, every NCCL export exists and refuses with the feature's name.
    #[test]
    fn without_the_nccl_feature_the_exports_say_so() {
        let s = sys::cudaStreamPerThread();
        let (p, q) = (core::ptr::null::<c_void>(), core::ptr::null_mut::<c_void>());
        let mut id = [0u8; ORDO_NCCL_UNIQUE_ID_BYTES];
        let mut comm = core::ptr::null_mut();
        let h = core::ptr::null_mut::<OrdoNcclComm>();
        // SAFETY (every call): refused before any pointer would be used.
        let mut borrowed = core::ptr::null_mut();
        let calls: [&mut dyn FnMut() -> OrdoStatus; 11] = [
            &mut || unsafe { ordo_nccl_get_unique_id(id.as_mut_ptr(), id.len()) },
            &mut || unsafe { ordo_nccl_comm_init_rank(0, 1, [0u8; 128].as_ptr(), 128, 0, &mut comm) },
            &mut || ordo_nccl_comm_abort(h),
            &mut || unsafe { ordo_nccl_comm_borrow(q, &mut borrowed) },
            &mut || ordo_nccl_comm_release(h),
            &mut || unsafe { ordo_nccl_comm_wait(h, s, 1) },
            &mut || unsafe { ordo_nccl_all_reduce(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, s) },
            &mut || unsafe { ordo_nccl_broadcast(h, p, q, 4, ORDO_NCCL_FLOAT32, 0, s) },
            &mut || unsafe { ordo_nccl_reduce(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, 0, s) },
            &mut || unsafe { ordo_nccl_all_gather(h, p, q, 4, ORDO_NCCL_FLOAT32, s) },
            &mut || unsafe { ordo_nccl_reduce_scatter(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, s) },
        ];
        for call in calls {
            assert_eq!(call(), ORDO_ERROR_NOT_SUPPORTED);
            let mut buf = [0 as core::ffi::c_char; 256];
            // SAFETY: a buffer of its length.
            unsafe { crate::last_error::ordo_last_error_message(buf.as_mut_ptr(), buf.len()) };
            // SAFETY: NUL-terminated.
            let message = unsafe { core::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
            assert!(message.contains("`nccl` feature"), "{message}");
        }
        ordo_nccl_comm_destroy(h);
    }
}
