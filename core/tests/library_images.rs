//! What `Library::from_ptx` and `Library::from_image` let reach `cudaLibraryLoadData`: real
//! images made by nvcc 13.0 (`tests/fixtures`, from `add_const.cu`: a cubin for sm_90, a fatbin
//! with an sm_90 cubin and compute_75 PTX, and the same fatbin compressed with Zstandard, nvcc
//! 13.0's default, and with LZ4, CUDA 12's and `--compress-mode=speed`'s) pass ordo's checks;
//! every truncation of them, every size pushed past the bytes, every wrong magic is a usage error
//! before CUDA reads anything. On a GPU the real images load, and their kernel runs (checked
//! against the CPU).
//!
//! Fixtures:
//! `nvcc -arch=sm_90 -cubin -o add_const.sm_90.cubin add_const.cu`,
//! `nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75 -o add_const.fatbin add_const.cu`,
//! the same with `-Xfatbin -compress-all` for `add_const.compressed.fatbin`, and with
//! `-Xfatbin -compress-all --compress-mode=speed` for `add_const.lz4.fatbin`.
#![cfg(cuda_library_api)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::library::Library;
use ordo_cuda_core::*;

const CUBIN: &[u8] = include_bytes!("fixtures/add_const.sm_90.cubin");
const FATBIN: &[u8] = include_bytes!("fixtures/add_const.fatbin");
const COMPRESSED: &[u8] = include_bytes!("fixtures/add_const.compressed.fatbin");
const LZ4: &[u8] = include_bytes!("fixtures/add_const.lz4.fatbin");

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
    for image in [CUBIN, FATBIN, COMPRESSED, LZ4] {
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
        // Entries larger than ELF64's: a reader stepping by the structure and one stepping by
        // the field would see different tables.
        ("section header entries", Box::new(|c| put_u16(c, 58, 128))),
        ("program header entries", Box::new(|c| put_u16(c, 54, 112))),
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
    for image in [FATBIN, COMPRESSED, LZ4] {
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
        if flags & (0x2000 | 0x8000) != 0 {
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
    // Eight bytes of another format's magic and no NUL: the driver would read past ordo's copy.
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
    for (name, image) in [("cubin", CUBIN), ("fatbin", FATBIN), ("compressed fatbin", COMPRESSED), ("LZ4 fatbin", LZ4)]
    {
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

/// The section headers of `cubin` whose type is `kind`, as their offsets.
fn sections_of(cubin: &[u8], kind: u32) -> Vec<usize> {
    let (shoff, shnum) = (u64_at(cubin, 40), u16_at(cubin, 60));
    (0..shnum).map(|i| shoff + i * 64).filter(|&s| u32_at(cubin, s + 4) as u32 == kind).collect()
}

/// Indices and offsets that one table of a cubin holds into another (a section's `sh_link` and
/// `sh_info`, a symbol's section, a relocation's symbol, a note's sizes), each pushed past what
/// it names: refused before CUDA, which would index past its tables.
#[test]
fn a_cubin_whose_indices_name_nothing_is_refused() {
    let cubin = CUBIN.to_vec();
    let shnum = u16_at(&cubin, 60) as u32;
    let (symtab, rela, note) = (sections_of(&cubin, 2)[0], sections_of(&cubin, 4)[0], sections_of(&cubin, 7)[0]);
    let symbols = u64_at(&cubin, symtab + 24);
    let (relocations, notes) = (u64_at(&cubin, rela + 24), u64_at(&cubin, note + 24));
    let note_size = u64_at(&cubin, note + 32) as u32;
    let mutations: Vec<Mutation> = vec![
        ("sh_link names no section", Box::new(move |c| put_u32(c, note + 40, shnum))),
        ("sh_info names no section", Box::new(move |c| put_u32(c, rela + 44, shnum + 7))),
        ("symbol table entries", Box::new(move |c| put_u64(c, symtab + 56, 48))),
        // The second symbol's section index.
        ("st_shndx", Box::new(move |c| put_u16(c, symbols + 24 + 6, shnum as u16))),
        ("st_shndx", Box::new(move |c| put_u16(c, symbols + 24 + 6, 0xffff))),
        ("relocation entries", Box::new(move |c| put_u64(c, rela + 56, 16))),
        ("names no symbol table", Box::new(move |c| put_u32(c, rela + 40, 0))),
        // The first relocation's symbol (the high half of r_info).
        ("relocation whose symbol", Box::new(move |c| put_u32(c, relocations + 12, 1 << 20))),
        // The first note's descriptor size.
        ("note whose name or descriptor", Box::new(move |c| put_u32(c, notes + 4, note_size))),
        ("note whose name or descriptor", Box::new(move |c| put_u32(c, notes, u32::MAX))),
    ];
    for (why, mutate) in &mutations {
        let mut bad = cubin.clone();
        mutate(&mut bad);
        refused(&bad, why);
    }
}

/// What a fatbin entry's header points to (its options, their string, its object name) and the
/// compressed size of an LZ4 entry, pushed past the entry: refused before CUDA.
#[test]
fn fatbin_entries_that_point_past_themselves_are_refused() {
    // The offsets of each entry of `fatbin`.
    let entries = |fatbin: &[u8]| {
        let (mut at, end) = (u16_at(fatbin, 6), u16_at(fatbin, 6) + u64_at(fatbin, 8));
        let mut out = Vec::new();
        while at < end {
            out.push(at);
            at += u32_at(fatbin, at + 4) + u64_at(fatbin, at + 8);
        }
        out
    };
    for image in [FATBIN, COMPRESSED, LZ4] {
        let fatbin = image.to_vec();
        let all = entries(&fatbin);
        assert_eq!(all.len(), 2, "a cubin and a PTX entry");
        for &entry in &all {
            let (header, payload) = (u32_at(&fatbin, entry + 4) as u32, u64_at(&fatbin, entry + 8) as u32);
            let mut mutations: Vec<Mutation> = vec![
                ("options or object name", Box::new(move |f| put_u32(f, entry + 20, header + payload))),
                ("options or object name", Box::new(move |f| put_u32(f, entry + 20, u32::MAX - 2))),
                ("options or object name", Box::new(move |f| put_u32(f, entry + 36, header + payload + 1))),
                ("options or object name", Box::new(move |f| put_u32(f, entry + 32, u32::MAX))),
            ];
            let options = u32_at(&fatbin, entry + 20);
            if options != 0 {
                // The options string's length, then its offset.
                let at = entry + options;
                mutations.push(("options or object name", Box::new(move |f| put_u32(f, at + 4, payload + header + 1))));
                mutations.push(("options or object name", Box::new(move |f| put_u32(f, at, u32::MAX))));
            }
            if u64_at(&fatbin, entry + 40) & (0x2000 | 0x8000) != 0 {
                mutations.push((
                    "compressed size is over its payload",
                    Box::new(move |f| put_u32(f, entry + 16, payload + 1)),
                ));
                mutations
                    .push(("compressed size is over its payload", Box::new(move |f| put_u32(f, entry + 16, u32::MAX))));
            } else if u16_at(&fatbin, entry) == 2 {
                mutations.push(("payload is no ELF", Box::new(move |f| f[entry + header as usize] = b'x')));
            }
            for (why, mutate) in &mutations {
                let mut bad = fatbin.clone();
                mutate(&mut bad);
                refused(&bad, why);
            }
        }
        // A header of more than 16 bytes: where CUDA starts the entries then is not known.
        let mut bad = fatbin.clone();
        put_u16(&mut bad, 6, 24);
        refused(&bad, "header size is over 16");
    }
}
