//! Events shared between processes: [`IpcEvent`] (made interprocess, timing off), its
//! [`IpcEventHandle`], and the [`ImportedEvent`] another process opens from it. Either process may
//! record the event, wait on it, query it and synchronise on it; a wait in one process on a record
//! made in the other orders work of the two processes on the device, without the host.

use super::handle::{decode, encode, from_c_chars, to_c_chars, HandleKind, CUDA_BYTES, HANDLE_BYTES};
use crate::error::{null_handle, Result};
use crate::event::{Event, EventFlags};
use core::marker::PhantomData;
use core::ops::Deref;
use ordo_cuda_sys as sys;

/// An event other processes may open: made with `cudaEventInterprocess | cudaEventDisableTiming`
/// on the current device (CUDA allows no other flags for it). Derefs to [`Event`] for
/// record, query, synchronise and waits.
#[derive(Debug)]
pub struct IpcEvent(Event);

impl IpcEvent {
    /// A new interprocess event on the current device (`cudaEventCreateWithFlags`).
    pub fn new() -> Result<IpcEvent> {
        Event::with_flags(EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).map(IpcEvent)
    }

    /// The handle other processes open ([`ImportedEvent::open`]) (`cudaIpcGetEventHandle`). It
    /// borrows the event: in this process the event outlives everything opened from it.
    pub fn export(&self) -> Result<IpcEventHandle<'_>> {
        let mut raw = sys::cudaIpcEventHandle_t::default();
        // SAFETY: a live interprocess event; `raw` is writable.
        cuda_call!(unsafe { sys::cudaIpcGetEventHandle(&mut raw, self.0.as_raw()) })?;
        Ok(IpcEventHandle { data: from_c_chars(&raw.reserved), _event: PhantomData })
    }
}

impl Deref for IpcEvent {
    type Target = Event;
    #[inline(always)]
    fn deref(&self) -> &Event {
        &self.0
    }
}

/// What another process needs to open an [`IpcEvent`] (CUDA's `cudaIpcEventHandle_t`). Plain data;
/// it borrows the event (`'a`). [`to_bytes`](Self::to_bytes) is its form on the wire,
/// [`from_bytes`](Self::from_bytes) (`unsafe`) the way back.
#[derive(Clone, Copy)]
pub struct IpcEventHandle<'a> {
    data: [u8; CUDA_BYTES],
    _event: PhantomData<&'a IpcEvent>,
}

impl core::fmt::Debug for IpcEventHandle<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IpcEventHandle").finish_non_exhaustive()
    }
}

impl IpcEventHandle<'_> {
    /// The handle's [`HANDLE_BYTES`] bytes, to send to another process.
    pub fn to_bytes(&self) -> [u8; HANDLE_BYTES] {
        encode(HandleKind::Event, 0, &self.data)
    }

    /// The handle whose [`to_bytes`](Self::to_bytes) gave `bytes`. Bytes that are not an event
    /// handle of this format are refused.
    ///
    /// # Safety
    /// The exporter keeps its [`IpcEvent`] alive until every [`ImportedEvent`] opened from the
    /// returned handle (in any process) has been dropped: CUDA calls any use of an imported event
    /// after the exporter destroyed it undefined behaviour.
    pub unsafe fn from_bytes(bytes: &[u8]) -> Result<IpcEventHandle<'static>> {
        let (_, data) = decode(HandleKind::Event, bytes, "IpcEventHandle::from_bytes")?;
        Ok(IpcEventHandle { data, _event: PhantomData })
    }
}

/// Another process's [`IpcEvent`], opened in this one (`cudaIpcOpenEventHandle`, on the current
/// device) and released on drop (`cudaEventDestroy`). Derefs to [`Event`]: record it, wait on it
/// ([`StreamRef::wait_event`](crate::StreamRef::wait_event)), query or synchronise it.
#[derive(Debug)]
pub struct ImportedEvent<'a> {
    event: Event,
    _handle: PhantomData<&'a IpcEvent>,
}

impl<'a> ImportedEvent<'a> {
    /// Opens the event behind `handle` (`cudaIpcOpenEventHandle`).
    pub fn open(handle: &IpcEventHandle<'a>) -> Result<ImportedEvent<'a>> {
        let raw = sys::cudaIpcEventHandle_t { reserved: to_c_chars(&handle.data) };
        let mut event: sys::cudaEvent_t = core::ptr::null_mut();
        // SAFETY: `event` is writable; the handle is plain data (CUDA refuses one it does not know).
        cuda_call!(unsafe { sys::cudaIpcOpenEventHandle(&mut event, raw) })?;
        // SAFETY: a live event CUDA just opened for us, destroyed once, by `Event`'s drop.
        let event = unsafe { Event::from_raw(event) }.ok_or_else(|| null_handle("cudaIpcOpenEventHandle"))?;
        Ok(ImportedEvent { event, _handle: PhantomData })
    }
}

impl Deref for ImportedEvent<'_> {
    type Target = Event;
    #[inline(always)]
    fn deref(&self) -> &Event {
        &self.event
    }
}
