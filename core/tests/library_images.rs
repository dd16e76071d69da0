//! What `Library::from_ptx` and `Library::from_image` let reach `cudaLibraryLoadData`: real
//! images made by nvcc 13.0 (`tests/fixtures`, from `add_const.cu`: a cubin for sm_90, a fatbin
//! with an sm_90 cubin and compute_75 PTX, and the same fatbin compressed) pass ordo's checks;
//! every truncation of them, every size pushed past the bytes, every wrong magic is a usage error
//! before CUDA reads anything. On a GPU the real images load, and their kernel runs (checked
//! against the CPU).
//!
//! Fixtures:
//! `nvcc -arch=sm_90 -cubin -o add_const.sm_90.cubin add_const.cu`,
//! `nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75 -o add_const.fatbin add_const.cu`,
//! and the same with `-Xfatbin -compress-all` for `add_const.compressed.fatbin`.
#![cfg(cuda_library_api)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::library::Library;
use ordo_cuda_core::*;

const CUBIN: &[u8] = include_bytes!("fixtures/add_const.sm_90.cubin");
const FATBIN: &[u8] = include_bytes!("fixtures/add_const.fatbin");
const COMPRESSED: &[u8] = include_bytes!("fixtures/add_const.compressed.fatbin");

/// The image through `from_image`.
fn load(image: &[u8]) -> Result<Library> {
    // SAFETY: the fixtures are nvcc's own output; every other image here is refused by ordo's
    // checks before CUDA reads it (which is what these tests assert).
    unsafe { Library::from_image(image) }
}

/// Refused by ordo, before CUDA, with a message containing `why`.
#[track_caller]
fn refused(image: &[u8], why: &str) {
    match load(image) {
        Err(Error::Usage(u)) => {
            assert!(u.what.as_str().contains(why), "{why:?} not in {:?}", u.what.as_str());
            assert_eq!(u.call, "Library::from_image");
        }
        other => panic!("expected ordo's refusal ({why}), got {other:?}"),
    }
}

/// Let through to CUDA: loaded on a GPU, CUDA's own error without one.
#[track_caller]
fn let_through(image: &[u8]) {
    if let Err(e) = load(image) {
        assert!(matches!(e, Error::Cuda(_)), "ordo refused a real image: {e}");
    }
}

/// A change to an image, and the words ordo's refusal of the changed image must contain.
type Mutation = (&'static str, Box<dyn Fn(&mut Vec<u8>)>);

fn put_u16(image: &mut [u8], at: usize, v: u16) {
    image[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(image: &mut [u8], at: usize, v: u32) {
    image[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(image: &mut [u8], at: usize, v: u64) {
    image[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn u16_at(image: &[u8], at: usize) -> usize {
    u16::from_le_bytes(image[at..at + 2].try_into().unwrap()) as usize
}
fn u32_at(image: &[u8], at: usize) -> usize {
    u32::from_le_bytes(image[at..at + 4].try_into().unwrap()) as usize
}
fn u64_at(image: &[u8], at: usize) -> usize {
    u64::from_le_bytes(image[at..at + 8].try_into().unwrap()) as usize
}

#[test]
fn real_images_pass_and_every_truncation_is_refused() {
    for image in [CUBIN, FATBIN, COMPRESSED] {
        let_through(image);
        // Longer than declared: the bytes after are never read.
        let_through(&[image, &[0xab; 64][..]].concat());
        // Misaligned: copied, then let through.
        let shifted = [&[0u8][..], image].concat();
        let_through(&shifted[1..]);
        for len in 0..image.len() {
            assert!(matches!(load(&image[..len]), Err(Error::Usage(_))), "a truncation to {len} bytes");
        }
    }
}

#[test]
fn a_cubin_whose_sizes_lie_past_its_bytes_is_refused() {
    let cubin = CUBIN.to_vec();
    let (phoff, shoff) = (u64_at(&cubin, 32), u64_at(&cubin, 40));
    let (phnum, shnum, shstrndx) = (u16_at(&cubin, 56), u16_at(&cubin, 60), u16_at(&cubin, 62));
    assert!(phnum > 0 && shnum > 2 && shstrndx > 0, "the fixture has both tables");
    let len = cubin.len() as u64;
    let mutations: Vec<Mutation> = vec![
        ("64-bit little-endian", Box::new(|c| c[4] = 1)),
        ("64-bit little-endian", Box::new(|c| c[5] = 2)),
        ("another machine", Box::new(|c| put_u16(c, 18, 62))),
        ("ELF header size", Box::new(|c| put_u16(c, 52, 32))),
        ("section header table lies past", Box::new(move |c| put_u64(c, 40, len - 64))),
        ("section header table lies past", Box::new(move |c| put_u64(c, 40, u64::MAX - 8))),
        ("section header table lies past", Box::new(move |c| put_u16(c, 60, shnum as u16 + 60))),
        ("section header entries", Box::new(|c| put_u16(c, 58, 40))),
        ("program header table lies past", Box::new(move |c| put_u64(c, 32, len - 8))),
        ("program header table lies past", Box::new(|c| put_u16(c, 56, 0xfff0))),
        ("program header entries", Box::new(|c| put_u16(c, 54, 16))),
        // Section 2's size, then its offset, pushed past the end.
        ("section whose bytes lie past", Box::new(move |c| put_u64(c, shoff + 2 * 64 + 32, len))),
        ("section whose bytes lie past", Box::new(move |c| put_u64(c, shoff + 2 * 64 + 24, u64::MAX - 4))),
        // Segment 0's size.
        ("segment whose bytes lie past", Box::new(move |c| put_u64(c, phoff + 32, len + 1))),
        ("section-name table index", Box::new(move |c| put_u16(c, 62, shnum as u16))),
        ("section name past its string table", Box::new(move |c| put_u32(c, shoff + 2 * 64, 1 << 30))),
        (
            "string table",
            Box::new(move |c| {
                // The section-name table's last byte made not NUL.
                let s = shoff + shstrndx * 64;
                let end = u64_at(c, s + 24) + u64_at(c, s + 32) - 1;
                c[end] = b'x';
            }),
        ),
    ];
    for (why, mutate) in &mutations {
        let mut bad = cubin.clone();
        mutate(&mut bad);
        refused(&bad, why);
    }
    // A symbol's name past its string table: the first symbol table's second entry.
    let mut bad = cubin.clone();
    let symtab = (0..shnum).map(|i| shoff + i * 64).find(|&s| u32_at(&cubin, s + 4) == 2).unwrap();
    let entsize = u64_at(&cubin, symtab + 56);
    put_u32(&mut bad, u64_at(&cubin, symtab + 24) + entsize, 1 << 30);
    refused(&bad, "symbol name past its string table");
}

#[test]
fn a_fatbin_whose_sizes_lie_past_its_bytes_is_refused() {
    for image in [FATBIN, COMPRESSED] {
        let fatbin = image.to_vec();
        let header = u16_at(&fatbin, 6);
        let entry = header; // the first entry
        let entry_header = u32_at(&fatbin, entry + 4);
        let mutations: Vec<Mutation> = vec![
            ("version other than 1", Box::new(|f| put_u16(f, 4, 2))),
            ("header size is under 16", Box::new(|f| put_u16(f, 6, 8))),
            (
                "declared size",
                Box::new(|f| {
                    let size = u64_at(f, 8) as u64;
                    put_u64(f, 8, size + 1)
                }),
            ),
            ("overflows", Box::new(|f| put_u64(f, 8, u64::MAX - 4))),
            ("entry whose header is under 64", Box::new(move |f| put_u32(f, entry + 4, 0))),
            (
                "past the fatbin's declared size",
                Box::new(move |f| {
                    let size = u64_at(f, 8) as u64;
                    put_u64(f, entry + 8, size)
                }),
            ),
            ("past the fatbin's declared size", Box::new(move |f| put_u64(f, entry + 8, u64::MAX - 16))),
            ("past the fatbin's declared size", Box::new(move |f| put_u32(f, entry + 4, u32::MAX))),
        ];
        for (why, mutate) in &mutations {
            let mut bad = fatbin.clone();
            mutate(&mut bad);
            refused(&bad, why);
        }
        // The fatbin's declared size cut short of its last entry.
        let mut bad = fatbin.clone();
        put_u64(&mut bad, 8, u64_at(&fatbin, 8) as u64 - 8);
        refused(&bad, "past the fatbin's declared size");
        // A compressed entry claiming more compressed bytes than its payload, or an uncompressed
        // cubin entry whose cubin is cut.
        let mut bad = fatbin.clone();
        let flags = u64_at(&fatbin, entry + 40);
        if flags & 0x8000 != 0 {
            put_u32(&mut bad, entry + 16, u64_at(&fatbin, entry + 8) as u32 + 1);
            refused(&bad, "compressed size is over its payload");
        } else {
            let cubin = entry + entry_header;
            put_u64(&mut bad, cubin + 40, u64::MAX - 8); // the nested cubin's e_shoff
            refused(&bad, "section header table lies past");
        }
    }
}

#[test]
fn magics_of_other_formats_are_refused() {
    refused(&0x4662_43B1u32.to_le_bytes().repeat(8), "fatbin wrapper");
    refused(b"\x7fTileIR\0", "Tile IR");
    refused(b"\x7fTileIR\0\x01\x00\x00\x00 and more bytes", "Tile IR");
    refused(&[0x01, 0x5a, 0xe5, 0x1e, 0, 0, 0, 0], "old-style fatbin");
    refused(b"BC\xc0\xde\x35\x14\0\0", "bitcode");
    refused(&[0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0], "bitcode");
    refused(b"\x7fELF", "shorter than its ELF header");
    refused(&[0x50, 0xed, 0x55, 0xba, 1, 0], "fatbin shorter");
    refused(b".version 8.0\n.target sm_90\n", "without a NUL");
    refused(b"", "empty");
    refused(b".version 8.0\x01\n\0", "control character");
}

#[test]
fn ptx_text_that_is_no_ptx_is_refused() {
    let usage = |r: Result<Library>| match r {
        Err(Error::Usage(u)) => u.call == "Library::from_ptx",
        _ => false,
    };
    // The review's 8 bytes, which made the driver read past ordo's copy.
    assert!(usage(Library::from_ptx("\u{7f}TileIR\0")));
    assert!(usage(Library::from_ptx("\u{7f}ELF\u{2}\u{1}\u{1}")));
    assert!(usage(Library::from_ptx(".version 8.0\0.target sm_90\n")), "a NUL inside");
    assert!(usage(Library::from_ptx(".version 8.0\u{1b}[0m\n")), "an escape character");
    // Text: let through (CUDA's error without a GPU; on one, CUDA refuses what is not PTX).
    for text in [".version 8.0\n", "// only a comment\n\0", "\t\r\n"] {
        assert!(!usage(Library::from_ptx(text)), "{text:?}");
    }
}

/// `ordo_add_const(float* x, float c, int n)` from each real image: loaded, launched through the
/// default path and through the runtime, checked against the CPU. The cubin is for sm_90 only.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn real_images_load_and_run() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 30_011usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 97) as f32 - 48.0).collect();
    let mut d = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
    memory::copy::h2d_blocking(d.as_mut_slice(), &host, s).unwrap();
    let sm90 = Device::current().unwrap().compute_capability().unwrap() == (9, 0);
    let config = launch::LaunchConfig::for_elements(n, 256).unwrap();
    let mut adds = 0.0f32;
    for (name, image) in [("cubin", CUBIN), ("fatbin", FATBIN), ("compressed fatbin", COMPRESSED)] {
        if name == "cubin" && !sm90 {
            println!("the sm_90 cubin is not for this device: skipped");
            continue;
        }
        let library = load(image).unwrap_or_else(|e| panic!("{name}: {e}"));
        // SAFETY: ordo_add_const takes (float*, float, int).
        let k = unsafe { library.kernel::<(*mut f32, f32, i32)>(c"ordo_add_const") }.unwrap();
        // SAFETY: `d` holds n floats on this stream's device; the kernel keeps its library.
        unsafe {
            k.launch(s, &config, (d.as_mut_ptr(), 0.5, n as i32)).unwrap();
            k.as_kernel().launch_runtime(s, &config, (d.as_mut_ptr(), 0.25, n as i32)).unwrap();
        }
        adds += 0.75;
        let mut got = vec![0f32; n];
        memory::copy::d2h_blocking(&mut got, d.as_slice(), s).unwrap();
        assert!(got == host.iter().map(|v| v + adds).collect::<Vec<_>>(), "{name}");
    }
    drop(d);
    stream.synchronize().unwrap();
}
