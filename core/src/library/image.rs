//! What ordo checks of an image before `cudaLibraryLoadData` reads it. CUDA takes a bare pointer
//! and reads as far as the image says (a NUL for PTX, the sizes in its headers for a cubin or a
//! fatbin), and it tells the kinds apart by their first bytes. So an image is recognised by its
//! magic, and each kind is checked so that every size it declares lies inside the bytes given:
//!
//! - **PTX**: text up to a NUL inside the bytes (ordo's own copy for [`Library::from_ptx`]):
//!   printable characters, whitespace and UTF-8, no other control byte, so no binary magic (an
//!   ELF's or Tile IR's `0x7F`, a fatbin's) can begin it.
//! - **Cubin** (ELF64, little-endian, `EM_CUDA`): the ELF header; the program and section header
//!   tables (with ELF's extended counts), their entries of exactly the ELF64 sizes (56 and 64
//!   bytes: a reader that steps by the sizes of the structures and one that steps by the header's
//!   fields then see the same entries); every segment's and section's bytes; every section index a
//!   section header holds (`sh_link`, and `sh_info` where it is one: relocations, `SHF_INFO_LINK`)
//!   naming a section; the section-name string table, and the string table of each symbol table,
//!   NUL-terminated, with every name offset inside it; each symbol's section index naming a
//!   section (or a reserved index other than `SHN_XINDEX`); each relocation's symbol inside its
//!   symbol table; each note's name and descriptor inside its section.
//! - **Fatbin** (magic `0xBA55ED50`, version 1, the 16-byte `fatBinaryHeader` of CUDA's
//!   `fatbinary.h`: magic, version, header size, size of what follows): the declared size inside
//!   the bytes, and each entry (kind, version, header size, payload size) inside it, entries end
//!   to end to the declared size; the ranges an entry header points to (its options and the
//!   options string, its object name) inside the entry; a compressed payload (LZ4, flag `0x2000`,
//!   as CUDA 12 and `--compress-mode=speed` write it; Zstandard, flag `0x8000`, CUDA 13's default)
//!   with its compressed size inside its payload; an uncompressed cubin entry checked as a cubin,
//!   an uncompressed PTX entry NUL-terminated inside its payload.
//! - **Refused**: the fatbin *wrapper* (`__fatBinC_Wrapper_t`, magic `0x466243B1`: it holds
//!   pointers, not an image), Tile IR (`\x7FTileIR`: its sizes are not documented), the old
//!   fatbin magic `0x1EE55A01`, LLVM bitcode (NVVM IR), 32-bit or big-endian ELF, an ELF of
//!   another machine.
//!
//! The layouts checked here are ELF's and the fatbin's own: those that say how many bytes there
//! are, and the indices and offsets of one table into another. What lies inside NVIDIA's own
//! records (the code, the `.nv.info` attributes, the call graph, a note's descriptor, where a
//! relocation patches, a compressed stream) is for CUDA to read and for the image's maker to get
//! right.
//!
//! [`Library::from_ptx`]: super::Library::from_ptx

/// What an image is, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Text, read by CUDA up to its first NUL.
    Ptx,
    /// An ELF cubin.
    Cubin,
    /// A fatbin.
    Fatbin,
}

/// Why an image is refused: a static sentence for a usage error.
pub(crate) type Refusal = &'static str;

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// `FATBIN_MAGIC` (0xBA55ED50), little-endian.
const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
/// `FATBINC_MAGIC` (fatbinary_section.h), the wrapper's, little-endian.
const FATBIN_WRAPPER_MAGIC: [u8; 4] = 0x4662_43B1u32.to_le_bytes();
/// The fatbin magic of old toolkits, little-endian.
const OLD_FATBIN_MAGIC: [u8; 4] = 0x1EE5_5A01u32.to_le_bytes();
const TILE_IR_MAGIC: [u8; 7] = *b"\x7fTileIR";
/// LLVM bitcode, and its wrapper (NVVM IR).
const BITCODE_MAGIC: [u8; 4] = [b'B', b'C', 0xc0, 0xde];
const BITCODE_WRAPPER_MAGIC: [u8; 4] = 0x0B17_C0DEu32.to_le_bytes();

/// The kind of `image` after its checks (see the [module docs](self)).
pub(crate) fn check(image: &[u8]) -> Result<Kind, Refusal> {
    if image.is_empty() {
        return Err("an empty image");
    }
    if image.starts_with(&ELF_MAGIC) {
        check_elf(image)?;
        return Ok(Kind::Cubin);
    }
    if image.starts_with(&FATBIN_MAGIC) {
        check_fatbin(image)?;
        return Ok(Kind::Fatbin);
    }
    if let Some(refusal) = foreign_magic(image) {
        return Err(refusal);
    }
    let Some(end) = image.iter().position(|&b| b == 0) else {
        return Err(
            "PTX (or an image of no kind ordo knows) without a NUL inside the bytes given: CUDA would read past them",
        );
    };
    check_ptx_text(&image[..end])?;
    Ok(Kind::Ptx)
}

/// The magic of a kind ordo refuses, and why; `None` for none.
fn foreign_magic(image: &[u8]) -> Option<Refusal> {
    if image.starts_with(&FATBIN_WRAPPER_MAGIC) {
        Some("a fatbin wrapper (__fatBinC_Wrapper_t, magic 0x466243B1) holds pointers, not an image: pass the fatbin it points to")
    } else if image.starts_with(&TILE_IR_MAGIC) {
        Some("Tile IR (magic \\x7FTileIR): ordo cannot check its sizes before CUDA reads it")
    } else if image.starts_with(&OLD_FATBIN_MAGIC) {
        Some("an old-style fatbin (magic 0x1EE55A01): not supported")
    } else if image.starts_with(&BITCODE_MAGIC) || image.starts_with(&BITCODE_WRAPPER_MAGIC) {
        Some("LLVM bitcode (NVVM IR) is no image cudaLibraryLoadData takes: compile it to PTX first")
    } else {
        None
    }
}

/// PTX text before its NUL: no NUL, no control byte but whitespace, so that no binary magic can
/// begin it (each of those has a `0x7F`, a byte over `0x7F` first, or a control byte).
pub(crate) fn check_ptx_text(text: &[u8]) -> Result<(), Refusal> {
    if text.contains(&0) {
        return Err("PTX text with a NUL before its end");
    }
    if foreign_magic(text).is_some() || text.starts_with(&ELF_MAGIC) || text.starts_with(&FATBIN_MAGIC) {
        return Err("a binary image, not PTX text: load it with Library::from_image");
    }
    if text.iter().any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) || b == 0x7f) {
        return Err("PTX text with a control character in it: not PTX (a binary image begins with one)");
    }
    Ok(())
}

/// Little-endian reads inside `bytes`; `None` past its end.
trait Read {
    fn u16_at(&self, at: u64) -> Option<u16>;
    fn u32_at(&self, at: u64) -> Option<u32>;
    fn u64_at(&self, at: u64) -> Option<u64>;
    /// The range `[at, at + len)`, where it lies inside.
    fn range(&self, at: u64, len: u64) -> Option<&[u8]>;
}

impl Read for [u8] {
    fn u16_at(&self, at: u64) -> Option<u16> {
        Some(u16::from_le_bytes(self.range(at, 2)?.try_into().ok()?))
    }
    fn u32_at(&self, at: u64) -> Option<u32> {
        Some(u32::from_le_bytes(self.range(at, 4)?.try_into().ok()?))
    }
    fn u64_at(&self, at: u64) -> Option<u64> {
        Some(u64::from_le_bytes(self.range(at, 8)?.try_into().ok()?))
    }
    fn range(&self, at: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.get(start..end)
    }
}

/// `EM_CUDA`.
const EM_CUDA: u16 = 190;
const ELF64_HEADER: u64 = 64;
const ELF64_PHDR: u64 = 56;
const ELF64_SHDR: u64 = 64;
const ELF64_SYM: u64 = 24;
const ELF64_REL: u64 = 16;
const ELF64_RELA: u64 = 24;
const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;
const SHT_NOTE: u32 = 7;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHT_DYNSYM: u32 = 11;
/// `sh_flags` saying that `sh_info` holds a section index.
const SHF_INFO_LINK: u64 = 0x40;
/// Section indices from here up are reserved (`SHN_ABS`, `SHN_COMMON`, ...), not sections.
const SHN_LORESERVE: u16 = 0xff00;
/// `e_phnum` saying that the count is in section 0's `sh_info`.
const PN_XNUM: u16 = 0xffff;
/// `e_shstrndx` saying that the index is in section 0's `sh_link`.
const SHN_XINDEX: u16 = 0xffff;

/// One section header's fields that say where its bytes are and which sections it names.
struct Section {
    name: u32,
    kind: u32,
    flags: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    entsize: u64,
}

/// A cubin: see the [module docs](self).
fn check_elf(elf: &[u8]) -> Result<(), Refusal> {
    const TRUNCATED: Refusal = "a cubin (ELF) shorter than its ELF header";
    let header = elf.range(0, ELF64_HEADER).ok_or(TRUNCATED)?;
    if header[4] != 2 || header[5] != 1 || header[6] != 1 {
        return Err("an ELF that is not 64-bit little-endian ELF version 1: not a cubin CUDA loads");
    }
    if elf.u16_at(18) != Some(EM_CUDA) {
        return Err("an ELF of another machine (e_machine is not EM_CUDA, 190): not a cubin");
    }
    let (phoff, shoff) = (elf.u64_at(32).ok_or(TRUNCATED)?, elf.u64_at(40).ok_or(TRUNCATED)?);
    let ehsize = elf.u16_at(52).ok_or(TRUNCATED)?;
    let (phentsize, mut phnum) = (elf.u16_at(54).ok_or(TRUNCATED)?, elf.u16_at(56).ok_or(TRUNCATED)?);
    let (shentsize, shnum, shstrndx) =
        (elf.u16_at(58).ok_or(TRUNCATED)?, elf.u16_at(60).ok_or(TRUNCATED)?, elf.u16_at(62).ok_or(TRUNCATED)?);
    if u64::from(ehsize) < ELF64_HEADER {
        return Err("a cubin whose ELF header size (e_ehsize) is under 64 bytes");
    }
    let sections = section_count(elf, shoff, shentsize, shnum)?;
    let section = |i: u64| read_section(elf, shoff, u64::from(shentsize), i);
    if phnum == PN_XNUM {
        let first =
            elf.u32_at(shoff.checked_add(44).ok_or(TRUNCATED)?).ok_or("a cubin with PN_XNUM and no section 0")?;
        phnum = u16::try_from(first).map_err(|_| "a cubin with more program headers than ordo checks (over 65535)")?;
    }
    if phnum > 0 {
        if u64::from(phentsize) != ELF64_PHDR {
            return Err("a cubin whose program header entries (e_phentsize) are not 56 bytes");
        }
        let table = u64::from(phnum) * u64::from(phentsize);
        elf.range(phoff, table).ok_or("a cubin whose program header table lies past the bytes given")?;
        for i in 0..u64::from(phnum) {
            let at = phoff + i * u64::from(phentsize);
            let (offset, filesz) = (elf.u64_at(at + 8).ok_or(TRUNCATED)?, elf.u64_at(at + 32).ok_or(TRUNCATED)?);
            if filesz > 0 && elf.range(offset, filesz).is_none() {
                return Err("a cubin with a segment whose bytes lie past the bytes given");
            }
        }
    }
    for i in 0..sections {
        let s = section(i)?;
        if s.kind != SHT_NOBITS && s.size > 0 && elf.range(s.offset, s.size).is_none() {
            return Err("a cubin with a section whose bytes lie past the bytes given");
        }
        if u64::from(s.link) >= sections {
            return Err("a cubin with a section whose sh_link names no section");
        }
        let info_is_index = s.kind == SHT_REL || s.kind == SHT_RELA || s.flags & SHF_INFO_LINK != 0;
        if info_is_index && u64::from(s.info) >= sections {
            return Err("a cubin with a section whose sh_info names no section");
        }
    }
    let mut shstrndx = u64::from(shstrndx);
    if shstrndx == u64::from(SHN_XINDEX) && sections > 0 {
        shstrndx = u64::from(section(0)?.link);
    }
    if shstrndx != 0 {
        if shstrndx >= sections {
            return Err("a cubin whose section-name table index (e_shstrndx) names no section");
        }
        let names = string_table(elf, &section(shstrndx)?)?;
        for i in 0..sections {
            if u64::from(section(i)?.name) >= names {
                return Err("a cubin with a section name past its string table");
            }
        }
    }
    for i in 0..sections {
        let s = section(i)?;
        if s.size == 0 {
            continue;
        }
        match s.kind {
            SHT_SYMTAB | SHT_DYNSYM => check_symbols(elf, &s, sections, &section)?,
            SHT_REL | SHT_RELA => check_relocations(elf, &s, &section)?,
            SHT_NOTE => check_notes(elf, &s)?,
            _ => {}
        }
    }
    Ok(())
}

/// How many section headers there are (`e_shnum`, or section 0's `sh_size` when it is 0), their
/// table checked to lie inside `elf`.
fn section_count(elf: &[u8], shoff: u64, shentsize: u16, shnum: u16) -> Result<u64, Refusal> {
    if shoff == 0 {
        return if shnum == 0 { Ok(0) } else { Err("a cubin with section headers at offset 0") };
    }
    if u64::from(shentsize) != ELF64_SHDR {
        return Err("a cubin whose section header entries (e_shentsize) are not 64 bytes");
    }
    let count = if shnum == 0 {
        elf.u64_at(shoff.checked_add(32).ok_or("a cubin whose section header table lies past the bytes given")?)
            .ok_or("a cubin whose section header table lies past the bytes given")?
    } else {
        u64::from(shnum)
    };
    let table = count.checked_mul(u64::from(shentsize)).ok_or("a cubin with an impossible number of sections")?;
    elf.range(shoff, table).ok_or("a cubin whose section header table lies past the bytes given")?;
    Ok(count)
}

/// Section `i`'s header (its table already checked to lie inside `elf`, `i` below the count).
fn read_section(elf: &[u8], shoff: u64, shentsize: u64, i: u64) -> Result<Section, Refusal> {
    const PAST: Refusal = "a cubin whose section header table lies past the bytes given";
    let at = i.checked_mul(shentsize).and_then(|o| o.checked_add(shoff)).ok_or(PAST)?;
    Ok(Section {
        name: elf.u32_at(at).ok_or(PAST)?,
        kind: elf.u32_at(at + 4).ok_or(PAST)?,
        flags: elf.u64_at(at + 8).ok_or(PAST)?,
        offset: elf.u64_at(at + 24).ok_or(PAST)?,
        size: elf.u64_at(at + 32).ok_or(PAST)?,
        link: elf.u32_at(at + 40).ok_or(PAST)?,
        info: elf.u32_at(at + 44).ok_or(PAST)?,
        entsize: elf.u64_at(at + 56).ok_or(PAST)?,
    })
}

/// A string table's size, after checking that its bytes lie inside `elf` and end with a NUL (so
/// that every string in it ends inside it).
fn string_table(elf: &[u8], s: &Section) -> Result<u64, Refusal> {
    const BAD: Refusal = "a cubin with a string table that lies past the bytes given or does not end with a NUL";
    if s.kind == SHT_NOBITS || s.size == 0 {
        return Err(BAD);
    }
    let bytes = elf.range(s.offset, s.size).ok_or(BAD)?;
    if bytes.last() != Some(&0) {
        return Err(BAD);
    }
    Ok(s.size)
}

/// A symbol table `s` (its bytes inside `elf`, checked): entries of exactly the ELF64 size, as
/// many as fill it; its string table (`sh_link`) a section with a NUL at its end, every symbol's
/// name inside it; every symbol's section index a section, or a reserved index other than
/// `SHN_XINDEX` (whose real index lies in a table ordo does not read).
fn check_symbols(
    elf: &[u8],
    s: &Section,
    sections: u64,
    section: &impl Fn(u64) -> Result<Section, Refusal>,
) -> Result<(), Refusal> {
    const PAST: Refusal = "a cubin with a symbol past the bytes given";
    if s.entsize != ELF64_SYM || s.size % ELF64_SYM != 0 {
        return Err("a cubin whose symbol table entries (sh_entsize) are not 24 bytes, or not whole");
    }
    if u64::from(s.link) >= sections {
        return Err("a cubin whose symbol table names no string table (sh_link)");
    }
    let names = string_table(elf, &section(u64::from(s.link))?)?;
    for i in 0..s.size / ELF64_SYM {
        let at = s.offset + i * ELF64_SYM;
        let name = elf.u32_at(at).ok_or(PAST)?;
        if u64::from(name) >= names {
            return Err("a cubin with a symbol name past its string table");
        }
        let index = elf.u16_at(at + 6).ok_or(PAST)?;
        if index == SHN_XINDEX || (index < SHN_LORESERVE && u64::from(index) >= sections) {
            return Err("a cubin with a symbol whose section index (st_shndx) names no section");
        }
    }
    Ok(())
}

/// A relocation section `s` (its bytes inside `elf`, checked; its `sh_link` a section): entries of
/// exactly the ELF64 size, as many as fill it; `sh_link` a symbol table, and every entry's symbol
/// inside it.
fn check_relocations(
    elf: &[u8],
    s: &Section,
    section: &impl Fn(u64) -> Result<Section, Refusal>,
) -> Result<(), Refusal> {
    let entry = if s.kind == SHT_RELA { ELF64_RELA } else { ELF64_REL };
    if s.entsize != entry || s.size % entry != 0 {
        return Err("a cubin whose relocation entries (sh_entsize) are not of the ELF64 size, or not whole");
    }
    let symbols = section(u64::from(s.link))?;
    if symbols.kind != SHT_SYMTAB && symbols.kind != SHT_DYNSYM {
        return Err("a cubin whose relocation section names no symbol table (sh_link)");
    }
    let count = symbols.size / ELF64_SYM;
    for i in 0..s.size / entry {
        let info = elf.u64_at(s.offset + i * entry + 8).ok_or("a cubin with a relocation past the bytes given")?;
        if info >> 32 >= count {
            return Err("a cubin with a relocation whose symbol lies past its symbol table");
        }
    }
    Ok(())
}

/// A note section `s` (its bytes inside `elf`, checked): notes end to end, each header (name
/// size, descriptor size, type) and its name and descriptor, each padded to 4 bytes, inside it.
fn check_notes(elf: &[u8], s: &Section) -> Result<(), Refusal> {
    const PAST: Refusal = "a cubin with a note whose name or descriptor lies past its section";
    let notes = elf.range(s.offset, s.size).ok_or(PAST)?;
    let padded = |n: u32| u64::from(n).div_ceil(4) * 4;
    let mut at = 0u64;
    while at < s.size {
        let (name, desc) = (notes.u32_at(at).ok_or(PAST)?, notes.u32_at(at + 4).ok_or(PAST)?);
        notes.u32_at(at + 8).ok_or(PAST)?;
        at = (at + 12).checked_add(padded(name)).and_then(|a| a.checked_add(padded(desc))).ok_or(PAST)?;
        if at > s.size {
            return Err(PAST);
        }
    }
    Ok(())
}

/// `fatBinaryHeader`: magic, version, header size, size of what follows.
const FATBIN_HEADER: u64 = 16;
/// The entry header's fields read here end at its 48th byte; CUDA's are 64 bytes or more.
const FATBIN_ENTRY_HEADER_MIN: u64 = 64;
const FATBIN_KIND_PTX: u16 = 1;
const FATBIN_KIND_ELF: u16 = 2;
/// An entry's flags for a compressed payload: LZ4 (CUDA 12's, and `--compress-mode=speed`) and
/// Zstandard (CUDA 13's default), as nvcc 13.0 writes them.
const FATBIN_COMPRESSED: u64 = 0x2000 | 0x8000;

/// A fatbin: see the [module docs](self).
fn check_fatbin(fatbin: &[u8]) -> Result<(), Refusal> {
    const TRUNCATED: Refusal = "a fatbin shorter than its 16-byte header";
    if fatbin.u16_at(4).ok_or(TRUNCATED)? != 1 {
        return Err("a fatbin header of a version other than 1: ordo knows only version 1");
    }
    let header = u64::from(fatbin.u16_at(6).ok_or(TRUNCATED)?);
    let size = fatbin.u64_at(8).ok_or(TRUNCATED)?;
    if header < FATBIN_HEADER {
        return Err("a fatbin whose header size is under 16 bytes");
    }
    if header > FATBIN_HEADER {
        // Whether CUDA starts the entries at the header's size or at 16 is not documented: an
        // image where the two differ is refused, so that ordo checks the entries CUDA reads.
        return Err("a fatbin whose header size is over 16 bytes: ordo knows only the 16-byte header");
    }
    let end = header.checked_add(size).ok_or("a fatbin whose declared size overflows")?;
    let body =
        fatbin.range(0, end).ok_or("a fatbin whose declared size (header size + fatSize) lies past the bytes given")?;
    let mut at = header;
    while at < end {
        at = check_fatbin_entry(body, at, end)?;
    }
    Ok(())
}

/// The entry at `at` of a fatbin whose entries end at `end`; where the next begins.
fn check_fatbin_entry(body: &[u8], at: u64, end: u64) -> Result<u64, Refusal> {
    const PAST: Refusal = "a fatbin entry whose header or payload lies past the fatbin's declared size";
    let kind = body.u16_at(at).ok_or(PAST)?;
    let header = u64::from(body.u32_at(at + 4).ok_or(PAST)?);
    let payload = body.u64_at(at + 8).ok_or(PAST)?;
    if header < FATBIN_ENTRY_HEADER_MIN {
        return Err("a fatbin entry whose header is under 64 bytes");
    }
    let start = at.checked_add(header).ok_or(PAST)?;
    let next = start.checked_add(payload).ok_or(PAST)?;
    if next > end {
        return Err(PAST);
    }
    let bytes = body.range(start, payload).ok_or(PAST)?;
    // What the entry header points to: the options (an offset and a length, at `options`) and
    // their string, and the object's name, each inside the entry.
    const POINTS_PAST: Refusal = "a fatbin entry whose options or object name lie past the entry";
    let inside = |offset: u32, len: u32| {
        at.checked_add(u64::from(offset)).and_then(|s| s.checked_add(u64::from(len))).is_some_and(|end| end <= next)
    };
    let options = body.u32_at(at + 20).ok_or(PAST)?;
    if options != 0 {
        if !inside(options, 8) {
            return Err(POINTS_PAST);
        }
        let string = at + u64::from(options);
        let (offset, len) = (body.u32_at(string).ok_or(PAST)?, body.u32_at(string + 4).ok_or(PAST)?);
        if (offset != 0 || len != 0) && !inside(offset, len) {
            return Err(POINTS_PAST);
        }
    }
    let (name, name_len) = (body.u32_at(at + 32).ok_or(PAST)?, body.u32_at(at + 36).ok_or(PAST)?);
    if (name != 0 || name_len != 0) && !inside(name, name_len) {
        return Err(POINTS_PAST);
    }
    let compressed_size = u64::from(body.u32_at(at + 16).ok_or(PAST)?);
    let flags = body.u64_at(at + 40).ok_or(PAST)?;
    if flags & FATBIN_COMPRESSED != 0 {
        if compressed_size > payload {
            return Err("a fatbin entry whose compressed size is over its payload");
        }
    } else if kind == FATBIN_KIND_ELF {
        if !bytes.starts_with(&ELF_MAGIC) {
            return Err("a fatbin cubin entry whose payload is no ELF");
        }
        check_elf(bytes)?;
    } else if kind == FATBIN_KIND_PTX && !bytes.contains(&0) {
        return Err("a fatbin PTX entry without a NUL inside its payload");
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_no_ptx_is_refused_and_ptx_is_not() {
        assert_eq!(check(b".version 8.0\n.target sm_90\n\0"), Ok(Kind::Ptx));
        assert_eq!(check(b"// comment\t\r\n.version 8.0\0trailing bytes are not read"), Ok(Kind::Ptx));
        for bad in [
            &b"\x7fTileIR\0"[..],
            b"\x7fTileIR\0\x01\x02",
            b"\x7fELFxx\0",
            b".version 8.0",
            b"",
            b"\xb1\x43\x62\x46 wrapper",
            b"BC\xc0\xde\0",
            b"\x01\x5a\xe5\x1e\0",
            b"text with a bell \x07 in it\0",
            b"text with \x7f inside\0",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert!(check_ptx_text(b"a\0b").is_err());
        assert!(check_ptx_text(b"\x7fTileIR").is_err(), "Tile IR's magic alone, without a NUL");
        assert!(check_ptx_text("// \u{e9}t\u{e9}\n.version 8.0\n".as_bytes()).is_ok(), "UTF-8 in comments");
    }
}
