//! perf's jitdump file (`tools/perf/Documentation/jitdump-specification.txt` in the Linux
//! sources): `<dir>/jit-<pid>.dump`, a header, then per piece of code a
//! `JIT_CODE_DEBUG_INFO` record (each code range's line in the trace text) and a
//! `JIT_CODE_LOAD` record (name, address, size, code bytes, a unique index).
//!
//! The file is opened by the first piece compiled with a jitdump directory; later
//! directories are ignored (one file per process). It is mapped executable once, as the
//! specification asks, so that `perf record` sees the mapping and `perf inject --jit`
//! finds the file. Timestamps are `CLOCK_MONOTONIC` (`perf record -k mono`). The trace text
//! each record's lines refer to is written beside it as `<symbol>.trace` and kept (perf
//! reads it after the run). All values are little-endian (the x86-64 native order).

use super::{line_ranges, Piece, SourceText};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// "JiTD" read as a native `u32`.
const MAGIC: u32 = 0x4A69_5444;
/// The format version.
const VERSION: u32 = 1;
/// Record ids.
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_DEBUG_INFO: u32 = 2;
/// `EM_X86_64`.
const ELF_MACH: u32 = 62;
/// Header size in bytes.
const HEADER_SIZE: u32 = 40;

/// The open dump of this process.
struct Dump {
    file: File,
    dir: PathBuf,
    /// The next `JIT_CODE_LOAD` index.
    next_index: u64,
}

/// `None` before the first use; `Some(None)` after the file could not be created.
static DUMP: Mutex<Option<Option<Dump>>> = Mutex::new(None);

/// `CLOCK_MONOTONIC` in nanoseconds.
fn timestamp() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Create the dump in `dir`: write the header and map the file executable.
fn open(dir: &Path) -> std::io::Result<Dump> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("jit-{}.dump", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)?;
    let mut h = Vec::with_capacity(HEADER_SIZE as usize);
    for w in [MAGIC, VERSION, HEADER_SIZE, ELF_MACH, 0, std::process::id()] {
        h.extend_from_slice(&w.to_le_bytes());
    }
    h.extend_from_slice(&timestamp().to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // flags
    file.write_all(&h)?;
    // SAFETY: a new private, read+execute mapping of the file's first page at an address
    // the kernel chooses; nothing ever reads or runs it (perf only records that it exists).
    // It stays mapped for the life of the process.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Dump {
        file,
        dir: dir.to_path_buf(),
        next_index: 0,
    })
}

/// A record: id, total size (padded to 8 bytes), timestamp, then `body`.
fn record_bytes(id: u32, body: &[u8]) -> Vec<u8> {
    let size = (16 + body.len()).next_multiple_of(8);
    let mut r = Vec::with_capacity(size);
    r.extend_from_slice(&id.to_le_bytes());
    r.extend_from_slice(&(size as u32).to_le_bytes());
    r.extend_from_slice(&timestamp().to_le_bytes());
    r.extend_from_slice(body);
    r.resize(size, 0);
    r
}

/// Add `piece` (named `symbol`, its text `source`) to the dump in `dir`.
pub(crate) fn record(dir: &Path, piece: &Piece<'_>, symbol: &str, source: &SourceText) {
    let mut state = DUMP.lock().unwrap_or_else(|e| e.into_inner());
    let dump = state.get_or_insert_with(|| match open(dir) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("tracejit: no jitdump in {}: {e}", dir.display());
            None
        }
    });
    let Some(dump) = dump else { return };
    let text = dump.dir.join(format!("{symbol}.trace"));
    let _ = std::fs::write(&text, &source.text);
    let addr = piece.code.as_ptr() as u64;

    let ranges = line_ranges(piece, source);
    let mut debug = Vec::new();
    debug.extend_from_slice(&addr.to_le_bytes());
    debug.extend_from_slice(&(ranges.len() as u64).to_le_bytes());
    let file_name = text.as_os_str().as_encoded_bytes();
    for &(start, _, line) in &ranges {
        debug.extend_from_slice(&(addr + u64::from(start)).to_le_bytes());
        debug.extend_from_slice(&line.to_le_bytes());
        debug.extend_from_slice(&0u32.to_le_bytes()); // discriminator
        debug.extend_from_slice(file_name);
        debug.push(0);
    }

    // SAFETY: `gettid` has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    let mut load = Vec::with_capacity(48 + symbol.len() + piece.code.len());
    load.extend_from_slice(&std::process::id().to_le_bytes());
    load.extend_from_slice(&tid.to_le_bytes());
    load.extend_from_slice(&addr.to_le_bytes()); // vma
    load.extend_from_slice(&addr.to_le_bytes()); // code_addr
    load.extend_from_slice(&(piece.code.len() as u64).to_le_bytes());
    load.extend_from_slice(&dump.next_index.to_le_bytes());
    load.extend_from_slice(symbol.as_bytes());
    load.push(0);
    load.extend_from_slice(piece.code);
    dump.next_index += 1;

    let mut out = record_bytes(JIT_CODE_DEBUG_INFO, &debug);
    out.extend_from_slice(&record_bytes(JIT_CODE_LOAD, &load));
    if let Err(e) = dump.file.write_all(&out) {
        eprintln!("tracejit: cannot write the jitdump: {e}");
    }
}
