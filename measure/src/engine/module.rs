//! Kernels from where users have them: a module file (cubin, fatbin, PTX, or CUDA C compiled by
//! NVRTC) loaded as an ordo [`Library`], with stamped copies of the named kernels added when the
//! module is text ([`crate::ptx::instrument`]); and, at each point of a sweep, the kernels of a
//! [`RunSpec`] made into [`Subject`]s with their buffers checked against the device's memory
//! ([`check_memory`]), allocated, and filled on the device (a memset, or a pattern of at most
//! 16 MiB made on the host and doubled on the device: the host's work does not grow with them).
//!
//! A cubin or fatbin carries its own sizes, which CUDA trusts: before it is loaded, its ELF or
//! fatbin headers are checked to lie within the file, so that a truncated or mangled file is an
//! error here rather than a read past the buffer inside CUDA.

use super::launch::{Func, RawArg, Target};
pub use super::source::ModuleSource;
use super::{invalid, Engine, Subject};
use crate::cli::{point_label, RunSpec};
use crate::spec::args::{fill_bytes, ArgSpec, ElemType, Fill};
use crate::spec::{axes, buffers, KernelSpec, SpecError};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::library::Library;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{cuda_call, sys, Device, Error, Result, SharedStreamBuffer, Stream};
use std::ffi::CString;
use std::sync::Arc;

/// What a module file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    /// An ELF cubin.
    Cubin,
    /// A fatbin.
    Fatbin,
    /// PTX text.
    Ptx,
    /// CUDA C source.
    CudaC,
}

/// The kind of the file `name` holding `bytes`: ELF and fatbin by their magic numbers, CUDA C by a
/// `.cu`/`.cuh` extension, PTX by a `.ptx` extension or a `.version`/`.entry` directive; anything
/// else is taken for CUDA C.
pub fn detect(name: &str, bytes: &[u8]) -> ModuleKind {
    if bytes.starts_with(&[0x7f, b'E', b'L', b'F']) {
        return ModuleKind::Cubin;
    }
    if bytes.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return ModuleKind::Fatbin;
    }
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".cu") || lower.ends_with(".cuh") {
        return ModuleKind::CudaC;
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(1 << 16)]);
    if lower.ends_with(".ptx") || text.contains(".version") && text.contains(".entry") {
        return ModuleKind::Ptx;
    }
    ModuleKind::CudaC
}

pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?)))
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?)))
}
pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// Whether `[offset, offset + size)` lies within `len` bytes.
fn within(offset: u64, size: u64, len: usize) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= len as u64)
}

/// Checks that a 64-bit little-endian ELF's program and section headers, and every section's
/// data, lie within the file.
pub fn check_elf(b: &[u8]) -> core::result::Result<(), String> {
    let bad = |what: &str| format!("not a complete 64-bit ELF cubin: {what}");
    if b.len() < 64 || b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return Err(bad("no 64-bit little-endian ELF header"));
    }
    let (phoff, phentsize, phnum) = (u64_at(b, 0x20), u16_at(b, 0x36), u16_at(b, 0x38));
    let (shoff, shentsize, shnum) = (u64_at(b, 0x28), u16_at(b, 0x3A), u16_at(b, 0x3C));
    let (Some(phoff), Some(phentsize), Some(phnum), Some(shoff), Some(shentsize), Some(shnum)) =
        (phoff, phentsize, phnum, shoff, shentsize, shnum)
    else {
        return Err(bad("a short header"));
    };
    if !within(phoff, phentsize * phnum, b.len()) || !within(shoff, shentsize * shnum, b.len()) {
        return Err(bad("its header tables lie past the end of the file"));
    }
    if (shnum > 0 && shentsize < 64) || (phnum > 0 && phentsize < 56) {
        return Err(bad("header table entries too small"));
    }
    for i in 0..phnum {
        let h = (phoff + i * phentsize) as usize;
        let (Some(offset), Some(size)) = (u64_at(b, h + 8), u64_at(b, h + 0x20)) else {
            return Err(bad("a short program header"));
        };
        if !within(offset, size, b.len()) {
            return Err(bad(&format!("segment {i} lies past the end of the file")));
        }
    }
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        let (kind, offset, size) = (u32_at(b, h + 4), u64_at(b, h + 0x18), u64_at(b, h + 0x20));
        let (Some(kind), Some(offset), Some(size)) = (kind, offset, size) else {
            return Err(bad("a short section header"));
        };
        // SHT_NOBITS (8) has no data in the file.
        if kind != 8 && !within(offset, size, b.len()) {
            return Err(bad(&format!("section {i} lies past the end of the file")));
        }
    }
    Ok(())
}

/// Checks that a fatbin's header and declared size lie within the file (`fatBinaryHeader`:
/// magic, version, header size, size of what follows).
pub fn check_fatbin(b: &[u8]) -> core::result::Result<(), String> {
    let bad = |what: &str| format!("not a complete fatbin: {what}");
    let (Some(magic), Some(header), Some(size)) = (u32_at(b, 0), u16_at(b, 6), u64_at(b, 8)) else {
        return Err(bad("a short header"));
    };
    if magic != u64::from(FATBIN_MAGIC) || header < 16 || !within(header, size, b.len()) {
        return Err(bad("its declared size runs past the end of the file"));
    }
    Ok(())
}

/// A loaded module, with what is known of its kernels.
pub struct Module {
    /// What the file held.
    pub kind: ModuleKind,
    library: Library,
    /// Per instrumented kernel: its stamped copy's name and whether it waits.
    stamped: Vec<(String, String, bool)>,
    /// Per delayed kernel ([`crate::check::delay`]): its delayed copy's name and whether the copy
    /// can trigger early.
    delayed: Vec<(String, String, bool)>,
}

impl Module {
    /// Loads `path` (see [`detect`]); for PTX and CUDA C, adds stamped copies of `instrument`'s
    /// kernels first. CUDA C is compiled by NVRTC for `device`'s architecture (with `nvrtc_options`
    /// added; an `--gpu-architecture`/`-arch` among them replaces the default).
    pub fn load(path: &str, instrument: &[&str], nvrtc_options: &[String], device: Device) -> Result<Module> {
        let source = ModuleSource::read(path, nvrtc_options, Some(device.compute_capability()?))?;
        Module::from_source(&source, instrument, &[])
    }

    /// Loads a module file read before: a cubin or fatbin as it is, PTX (and CUDA C) with stamped
    /// copies of `instrument`'s kernels and delayed copies ([`crate::check::delay`]) of `delay`'s.
    /// A fatbin whose PTX can be read is loaded from its PTX when `delay` names kernels.
    pub fn from_source(source: &ModuleSource, instrument: &[&str], delay: &[&str]) -> Result<Module> {
        let (kind, path) = (source.kind, source.path.as_str());
        let ptx = match (&source.ptx, kind) {
            (Ok(ptx), ModuleKind::Ptx | ModuleKind::CudaC) => ptx,
            (Ok(ptx), ModuleKind::Fatbin) if !delay.is_empty() => ptx,
            _ => {
                // SAFETY: a cubin or fatbin whose headers, tables and entries lie within its bytes
                // (checked by `ModuleSource::read`); CUDA reads it during the call only.
                let library = unsafe { Library::from_image(&source.bytes)? };
                return Ok(Module { kind, library, stamped: Vec::new(), delayed: Vec::new() });
            }
        };
        let mut ptx = ptx.clone();
        let mut stamped = Vec::new();
        for &k in instrument {
            if stamped.iter().any(|(n, _, _): &(String, String, bool)| n == k) {
                continue;
            }
            let out = crate::ptx::instrument(&ptx, k).map_err(|e| invalid(format!("{path}: {e}")))?;
            stamped.push((k.to_owned(), out.stamped_name, out.has_wait));
            ptx = out.ptx;
        }
        let mut delayed = Vec::new();
        for &k in delay {
            if delayed.iter().any(|(n, _, _): &(String, String, bool)| n == k) {
                continue;
            }
            let out = crate::check::delay::delayed(&ptx, k).map_err(|e| invalid(format!("{path}: {e}")))?;
            delayed.push((k.to_owned(), out.name, out.can_trigger));
            ptx = out.ptx;
        }
        Ok(Module { kind, library: Library::from_ptx(&ptx)?, stamped, delayed })
    }

    /// The library.
    pub fn library(&self) -> &Library {
        &self.library
    }

    /// The stamped copy of `kernel` and whether the kernel waits, if it was instrumented.
    pub fn stamped(&self, kernel: &str) -> Option<(&str, bool)> {
        self.stamped.iter().find(|(k, _, _)| k == kernel).map(|(_, s, w)| (s.as_str(), *w))
    }

    /// The delayed copy of `kernel` and whether it can trigger early, if it was made.
    pub fn delayed(&self, kernel: &str) -> Option<(&str, bool)> {
        self.delayed.iter().find(|(k, _, _)| k == kernel).map(|(_, s, t)| (s.as_str(), *t))
    }

    /// The kernel `name` of the module.
    pub fn func(&self, name: &str) -> Result<Func> {
        let c = CString::new(name).map_err(|_| invalid(format!("kernel name {name:?} has a NUL")))?;
        Func::from_library(&self.library, &c).map_err(|e| match e {
            Error::Cuda(c) => invalid(format!("no kernel {name:?} in the module ({c})")),
            other => other,
        })
    }
}

/// CUDA C compiled to PTX by NVRTC for `arch` (`compute_90` if `None`), `options` added.
#[cfg(feature = "nvrtc")]
pub(crate) fn compile(path: &str, source: &str, options: &[String], arch: Option<(u32, u32)>) -> Result<String> {
    let (major, minor) = arch.unwrap_or((9, 0));
    let mut opts: Vec<String> = Vec::new();
    if !options.iter().any(|o| o.starts_with("--gpu-architecture") || o.starts_with("-arch")) {
        opts.push(format!("--gpu-architecture=compute_{major}{minor}"));
    }
    opts.extend(options.iter().cloned());
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let nvrtc = ordo_cuda_libs::nvrtc::Nvrtc::load()?;
    let name = std::path::Path::new(path).file_name().and_then(|n| n.to_str()).unwrap_or("module.cu");
    let ptx = nvrtc
        .compile_ptx(source, name, &opts)
        .map_err(|e| Error::invalid("NVRTC", format!("{path} did not compile: {e}")))?;
    Ok(ptx.text().to_owned())
}

#[cfg(not(feature = "nvrtc"))]
pub(crate) fn compile(path: &str, _source: &str, _options: &[String], _arch: Option<(u32, u32)>) -> Result<String> {
    Err(invalid(format!("{path}: CUDA C needs the nvrtc feature")))
}

/// One buffer of a point: its name if named, how the report names it (`B argument 0 (@b)` names
/// the argument that allocated it: `A argument 1 (b)`), its element type, and the memory.
pub struct PointBuffer {
    /// The name given (`x` of `x:f32[n]`).
    pub name: Option<String>,
    /// `A argument 1 (x)`.
    pub label: String,
    /// Its element type.
    pub ty: ElemType,
    /// The memory.
    pub buffer: SharedStreamBuffer<u8>,
}

/// The device buffers of one point of a sweep; dropped after the subjects that use them.
pub struct Buffers {
    buffers: Vec<PointBuffer>,
}

impl Buffers {
    /// Bytes allocated.
    pub fn bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.buffer.len()).sum()
    }

    /// The `i`-th buffer allocated (in argument order, A's then B's; a `@name` allocates none).
    pub fn get(&self, i: usize) -> Option<&SharedStreamBuffer<u8>> {
        self.buffers.get(i).map(|b| &b.buffer)
    }

    /// Every buffer, in the order allocated.
    pub fn all(&self) -> &[PointBuffer] {
        &self.buffers
    }

    /// Every buffer, mutably.
    pub fn all_mut(&mut self) -> &mut [PointBuffer] {
        &mut self.buffers
    }
}

/// The names the kernels of `spec` need stamped copies of: those that write no stamps themselves,
/// and their PDL forms.
pub fn to_instrument(spec: &RunSpec) -> Vec<&str> {
    let mut v = Vec::new();
    for k in spec.kernels.iter().filter(|k| !k.self_stamped()) {
        v.push(k.name.as_str());
        if let Some(p) = &k.pdl_form {
            v.push(p.as_str());
        }
    }
    v
}

/// The device's free and total memory, in bytes (`cudaMemGetInfo`, with `device` current).
pub fn memory_info(device: Device) -> Result<(u64, u64)> {
    device.with_current(|| {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both are writable.
        ordo_cuda_core::error::check(unsafe { sys::cudaMemGetInfo(&mut free, &mut total) }, "cudaMemGetInfo")?;
        Ok((free as u64, total as u64))
    })
}

/// Checks, before anything is allocated or measured, that the buffers of every point of the sweep
/// fit in `device`'s memory as it is now ([`buffers::check_fits`]); the error names the point.
pub fn check_memory(spec: &RunSpec, device: Device) -> Result<()> {
    let (free, total) = memory_info(device)?;
    for point in axes::points(&spec.axes).map_err(|e| invalid(e.to_string()))? {
        check_point(spec, &point, free, total)?;
    }
    Ok(())
}

/// The buffers of `spec` at `point`, checked against `free` of `total` bytes.
fn check_point(spec: &RunSpec, point: &[(String, i64)], free: u64, total: u64) -> Result<Vec<buffers::PlannedBuffer>> {
    let var = |name: &str| point.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let at = |e: SpecError| match point_label(&spec.axes, point) {
        Some(at) => invalid(format!("at {at}: {e}")),
        None => invalid(e.to_string()),
    };
    let planned = buffers::at_point(&spec.kernels, &var).map_err(at)?;
    buffers::check_fits(&planned, free, total).map_err(at)?;
    Ok(planned)
}

/// The most bytes of a fill pattern made on the host (16 MiB): larger buffers get it copied
/// over and over on the device.
const FILL_CHUNK: usize = 16 << 20;

/// Fills `buf` (of `ty` elements) as `fill` says, on `stream`, with work on the host that does
/// not grow with the buffer: a memset when every byte of the value is the same (zeros), else a
/// pattern of at most [`FILL_CHUNK`] bytes made on the host, copied to the buffer's start and then
/// doubled on the device (the filled part copied onto what follows it). A random buffer larger
/// than the chunk repeats the chunk's values.
fn fill_device(
    buf: &mut SharedStreamBuffer<u8>,
    ty: ElemType,
    fill: &Fill,
    var: &dyn Fn(&str) -> Option<i64>,
    seed: u64,
    stream: &Arc<Stream>,
) -> Result<()> {
    let spec_err = |e: SpecError| invalid(e.to_string());
    let bytes = buf.len();
    if let Fill::Value(value) = fill {
        let bits = ty.encode(value.eval(var).map_err(spec_err)?).map_err(spec_err)?.to_le_bytes();
        let element = &bits[..ty.size()];
        if element.iter().all(|&b| b == element[0]) {
            // SAFETY: the buffer is allocated on `stream` and freed on it after what is queued.
            return unsafe { copy::memset_async(buf.as_mut_slice(), element[0], stream.as_stream()) };
        }
    }
    // A whole number of elements: the chunk is a power of two, the element size one too.
    let chunk = FILL_CHUNK.min(bytes);
    let host = fill_bytes(ty, chunk / ty.size(), fill, var, seed).map_err(spec_err)?;
    copy::h2d_blocking(buf.slice_mut(..host.len())?, &host, stream.as_stream())?;
    let base = buf.as_mut_ptr();
    let mut filled = host.len();
    while filled < bytes {
        let n = filled.min(bytes - filled);
        // SAFETY: `[0, n)` and `[filled, filled + n)` lie within the buffer (n <= filled and
        // filled + n <= bytes) and do not overlap; the buffer lives on `stream`, where the copy
        // is queued.
        cuda_call!(unsafe {
            sys::cudaMemcpyAsync(
                base.add(filled).cast(),
                base.cast_const().cast(),
                n,
                sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
                stream.as_stream().as_raw(),
            )
        })?;
        filled += n;
    }
    Ok(())
}

/// The kernels of `spec` at the point `point` (axis values), as subjects, with their buffers. The
/// buffers are checked against the device's free memory before any is allocated
/// ([`buffers::check_fits`]).
pub fn subjects(
    engine: &Engine,
    module: &Module,
    spec: &RunSpec,
    point: &[(String, i64)],
) -> Result<(Vec<Subject>, Buffers)> {
    let var = |name: &str| point.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let (args, buffers) = arguments(engine, spec, point)?;
    let mut out = Vec::new();
    for (k, args) in spec.kernels.iter().zip(args) {
        out.push(subject(engine, module, k, &var, args)?);
    }
    Ok((out, buffers))
}

/// The arguments of each kernel of `spec` at `point`, with the buffers they point to: allocated
/// (after [`buffers::check_fits`] against the device's free memory), filled, and the fills
/// finished.
pub fn arguments(engine: &Engine, spec: &RunSpec, point: &[(String, i64)]) -> Result<(Vec<Vec<RawArg>>, Buffers)> {
    let var = |name: &str| point.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let spec_err = |e: crate::spec::SpecError| invalid(e.to_string());
    let (free, total) = memory_info(engine.device())?;
    let planned = check_point(spec, point, free, total)?;
    let mut planned = planned.iter();
    let mut buffers = Buffers { buffers: Vec::new() };
    let mut out = Vec::new();
    let mut seed = 0u64;
    for (ki, k) in spec.kernels.iter().enumerate() {
        let mut args = Vec::with_capacity(k.args.len());
        for (ai, a) in k.args.iter().enumerate() {
            args.push(match a {
                ArgSpec::Scalar { ty, value } => RawArg::Bytes {
                    word: ty.encode(value.eval(&var).map_err(spec_err)?).map_err(spec_err)?,
                    size: ty.size(),
                },
                ArgSpec::Buffer { name, ty, fill, .. } => {
                    let plan = planned.next().ok_or_else(|| invalid("a buffer not planned"))?;
                    let bytes = usize::try_from(plan.bytes)
                        .map_err(|_| invalid(format!("{}: {} bytes", plan.label(), plan.bytes)))?;
                    seed += 1;
                    let mut buf = engine.device().with_current(|| {
                        let mut buf = SharedStreamBuffer::<u8>::alloc_async(bytes, engine.stream())?;
                        fill_device(&mut buf, *ty, fill, &var, seed, engine.stream())?;
                        Ok(buf)
                    })?;
                    let word = buf.as_mut_ptr() as u64;
                    let which = if ki == 0 { "A" } else { "B" };
                    let label = match name {
                        Some(n) => format!("{which} argument {ai} ({n})"),
                        None => format!("{which} argument {ai}"),
                    };
                    buffers.buffers.push(PointBuffer { name: name.clone(), label, ty: *ty, buffer: buf });
                    RawArg::Bytes { word, size: 8 }
                }
                ArgSpec::Ref(name) => {
                    let b = buffers
                        .buffers
                        .iter_mut()
                        .find(|b| b.name.as_deref() == Some(name.as_str()))
                        .ok_or_else(|| invalid(format!("@{name}: no such buffer")))?;
                    RawArg::Bytes { word: b.buffer.as_mut_ptr() as u64, size: 8 }
                }
                ArgSpec::Stamps => RawArg::Stamps,
                ArgSpec::Launch => RawArg::Launch,
            });
        }
        out.push(args);
    }
    // The fills are queued on the engine's stream; they are done before anything is measured.
    engine.stream().synchronize()?;
    Ok((out, buffers))
}

/// The launch shape of kernel `k` at the point `var` gives.
pub fn launch_config(k: &KernelSpec, var: &dyn Fn(&str) -> Option<i64>) -> Result<LaunchConfig> {
    let spec_err = |e: crate::spec::SpecError| invalid(format!("kernel {}: {e}", k.name));
    let grid = k.grid.eval(var).map_err(spec_err)?;
    let block = k.block.eval(var).map_err(spec_err)?;
    let smem = k.smem.eval(var).map_err(spec_err)?;
    let smem = u32::try_from(smem).map_err(|_| invalid(format!("kernel {}: shared memory {smem} bytes", k.name)))?;
    let config = LaunchConfig::new(grid, block).with_shared_mem(smem);
    config.validate()?;
    Ok(config)
}

/// One kernel's subject: its plain form, stamped forms and PDL form, as the module and the spec
/// allow.
fn subject(
    engine: &Engine,
    module: &Module,
    k: &KernelSpec,
    var: &dyn Fn(&str) -> Option<i64>,
    args: Vec<RawArg>,
) -> Result<Subject> {
    let config = launch_config(k, var)?;
    let device = engine.device();
    let make = |name: &str, args: Vec<RawArg>| -> Result<Target> {
        let func = module.func(name)?;
        // SAFETY: the arguments are the buffers allocated for this point (alive until the
        // subjects are dropped, before the buffers), scalars, and the engine's stamp slots; their
        // count and sizes are checked against the kernel's parameters. What the kernel does with
        // them is the user's kernel: a fault is CUDA's error, reported.
        device.with_current(|| unsafe { Target::raw(name, func, config, args) })
    };
    let with_stamps = |mut a: Vec<RawArg>| {
        a.push(RawArg::Stamps);
        a
    };
    let mut s = Subject::new(make(&k.name, args.clone())?);
    let self_stamped = k.self_stamped();
    if self_stamped {
        s = s.self_stamped();
    } else if let Some((copy, _)) = module.stamped(&k.name) {
        s = s.with_stamped(make(copy, with_stamps(args.clone()))?);
    }
    match &k.pdl_form {
        Some(p) => {
            let pdl = make(p, args.clone())?;
            if self_stamped {
                s = s.with_pdl_form(pdl, None, true, true);
            } else if let Some((copy, waits)) = module.stamped(p) {
                let stamped = make(copy, with_stamps(args))?;
                s = s.with_pdl_form(pdl, Some(stamped), false, waits);
            } else {
                s = s.with_pdl_form(pdl, None, false, false);
            }
        }
        None => {
            let waits = module.stamped(&k.name).is_some_and(|(_, w)| w);
            if k.pdl || waits {
                s = s.waits(self_stamped || waits);
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_kinds() {
        assert_eq!(detect("a.bin", b"\x7fELF...."), ModuleKind::Cubin);
        assert_eq!(detect("a.bin", &FATBIN_MAGIC.to_le_bytes()), ModuleKind::Fatbin);
        assert_eq!(detect("k.cu", b"__global__ void k() {}"), ModuleKind::CudaC);
        assert_eq!(detect("k.txt", b".version 8.0\n.target sm_90\n.visible .entry k()"), ModuleKind::Ptx);
        assert_eq!(detect("k.PTX", b""), ModuleKind::Ptx);
        assert_eq!(detect("k", b"extern \"C\" __global__ void k() {}"), ModuleKind::CudaC);
    }

    #[test]
    fn truncated_images_are_refused() {
        assert!(check_elf(b"\x7fELF").is_err());
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        assert!(check_elf(&elf).is_ok(), "no tables at all is within the file");
        elf[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes());
        assert!(check_elf(&elf).is_err(), "section table past the end");
        let mut fb = vec![0u8; 16];
        fb[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        fb[6..8].copy_from_slice(&16u16.to_le_bytes());
        assert!(check_fatbin(&fb).is_ok(), "empty");
        fb[8..16].copy_from_slice(&32u64.to_le_bytes());
        assert!(check_fatbin(&fb).is_err(), "declared past the end");
        fb.extend_from_slice(&[0u8; 32]);
        assert!(check_fatbin(&fb).is_ok(), "32 bytes declared, 32 there");
        fb[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check_fatbin(&fb).is_err(), "overflowing size");
    }
}
