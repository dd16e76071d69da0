//! The parameters of copy and memset nodes ([`LinearCopy`], [`MemcpyNode`], [`MemsetParams`]),
//! which an executable graph can retarget.

use super::Node;
use crate::error::{Error, Result};
use ordo_cuda_sys as sys;

/// A copy node's work seen as one linear copy (`cudaGraphMemcpyNodeGetParams`): `bytes` bytes from
/// `src` to `dst`. Copies captured from `cudaMemcpyAsync` (every copy of
/// [`memory::copy`](crate::memory::copy)) have this form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearCopy {
    /// The destination address.
    pub dst: *mut core::ffi::c_void,
    /// The source address.
    pub src: *const core::ffi::c_void,
    /// The number of bytes copied.
    pub bytes: usize,
    /// CUDA's direction of the copy, as captured.
    pub kind: sys::cudaMemcpyKind,
}

impl LinearCopy {
    /// The linear form of a copy node's parameters, or `None` when the copy involves a CUDA array
    /// or more than one row (CUDA can retarget only one-dimensional copies).
    pub fn from_params(p: &sys::cudaMemcpy3DParms) -> Option<LinearCopy> {
        let one_dimensional = p.extent.height <= 1
            && p.extent.depth <= 1
            && p.srcPos.y == 0
            && p.srcPos.z == 0
            && p.dstPos.y == 0
            && p.dstPos.z == 0;
        if !p.srcArray.is_null() || !p.dstArray.is_null() || !one_dimensional || p.extent.width == 0 {
            return None;
        }
        Some(LinearCopy {
            dst: p.dstPtr.ptr.cast::<u8>().wrapping_add(p.dstPos.x).cast(),
            src: p.srcPtr.ptr.cast::<u8>().cast_const().wrapping_add(p.srcPos.x).cast(),
            bytes: p.extent.width,
            kind: p.kind,
        })
    }
}

/// A copy node whose work is one [`LinearCopy`], so that an executable graph can point it at other
/// memory ([`GraphExec::set_memcpy_node`](crate::graph::GraphExec::set_memcpy_node)). Found with
/// [`Graph::memcpy_nodes`](crate::graph::Graph::memcpy_nodes) or [`Node::memcpy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcpyNode<'g> {
    pub(crate) node: Node<'g>,
    pub(crate) copy: LinearCopy,
}

impl<'g> MemcpyNode<'g> {
    /// The node.
    pub fn node(&self) -> Node<'g> {
        self.node
    }

    /// The copy as it is in the graph (an executable graph's later changes are not seen here).
    pub fn copy(&self) -> LinearCopy {
        self.copy
    }
}

/// A memset node's parameters (`cudaMemsetParams`): `height` rows of `width` elements of
/// `element_size` bytes (1, 2 or 4), rows `pitch` bytes apart, each element set to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemsetParams {
    /// The first byte set.
    pub dst: *mut core::ffi::c_void,
    /// Bytes from one row to the next (unused for one row).
    pub pitch: usize,
    /// The value of each element (its low `element_size` bytes).
    pub value: u32,
    /// Bytes per element: 1, 2 or 4.
    pub element_size: u32,
    /// Elements per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl MemsetParams {
    fn from_raw(p: &sys::cudaMemsetParams) -> MemsetParams {
        MemsetParams {
            dst: p.dst,
            pitch: p.pitch,
            value: p.value,
            element_size: p.elementSize,
            width: p.width,
            height: p.height,
        }
    }

    /// CUDA's form, after ordo's checks: an element size of 1, 2 or 4 bytes and at least one
    /// element (CUDA supports no empty memset node).
    pub(crate) fn to_raw(self, call: &'static str) -> Result<sys::cudaMemsetParams> {
        if !matches!(self.element_size, 1 | 2 | 4) {
            return Err(Error::invalid(call, "a memset element is 1, 2 or 4 bytes"));
        }
        if self.width == 0 || self.height == 0 {
            return Err(Error::invalid(call, "a memset node sets at least one element"));
        }
        Ok(sys::cudaMemsetParams {
            dst: self.dst,
            pitch: self.pitch,
            value: self.value,
            elementSize: self.element_size,
            width: self.width,
            height: self.height,
        })
    }
}

impl<'g> Node<'g> {
    /// For a copy node, its parameters (`cudaGraphMemcpyNodeGetParams`).
    pub fn memcpy_params(self) -> Result<sys::cudaMemcpy3DParms> {
        let mut p = sys::cudaMemcpy3DParms::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphMemcpyNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(p)
    }

    /// For a copy node, the node typed as a [`MemcpyNode`] when its copy is linear
    /// ([`LinearCopy::from_params`]), `None` when it is not.
    pub fn memcpy(self) -> Result<Option<MemcpyNode<'g>>> {
        Ok(LinearCopy::from_params(&self.memcpy_params()?).map(|copy| MemcpyNode { node: self, copy }))
    }

    /// For a memset node, its parameters (`cudaGraphMemsetNodeGetParams`).
    pub fn memset_params(self) -> Result<MemsetParams> {
        let mut p = sys::cudaMemsetParams::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphMemsetNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(MemsetParams::from_raw(&p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn memset(element_size: u32, width: usize, height: usize) -> MemsetParams {
        MemsetParams { dst: core::ptr::null_mut(), pitch: 0, value: 7, element_size, width, height }
    }

    #[test]
    fn memset_params_are_checked_before_cuda() {
        for size in [1, 2, 4] {
            let raw = memset(size, 10, 1).to_raw("t").unwrap();
            assert_eq!((raw.elementSize, raw.width, raw.height, raw.value), (size, 10, 1, 7));
        }
        for size in [0, 3, 8] {
            let e = memset(size, 10, 1).to_raw("t").unwrap_err();
            assert!(e.to_string().contains("1, 2 or 4"), "{e}");
        }
        for (w, h) in [(0, 1), (1, 0)] {
            let e = memset(4, w, h).to_raw("t").unwrap_err();
            assert!(e.to_string().contains("at least one element"), "{e}");
        }
    }
}
