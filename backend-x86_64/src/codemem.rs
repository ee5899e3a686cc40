//! Executable memory for compiled traces: a code space of large shared regions, each mapped
//! twice, never writable and executable at once.
//!
//! A region is a `memfd` mapped twice: a read+execute view, which code runs from, and a
//! read+write view of the same pages at another address, which code is copied in and
//! patched through (the dual mapping V8's and Firefox's code spaces use for the same
//! purpose). No page is ever writable and executable, and writing needs no protection
//! switch at all, so compiling a trace makes no system call once its region exists, and a
//! trace can be written or patched while other traces of the region run on other threads.
//! The executable view is followed by an inaccessible guard page: a jump past the end of the
//! code faults instead of running whatever follows.
//!
//! Traces are packed into regions of [`REGION`] bytes (a trace larger than that gets a
//! region of its own), 64-byte aligned: the overhead per trace is its alignment padding
//! (under 64 bytes) and nothing else, since only free blocks are recorded. A dropped
//! trace's block is freed and coalesced with its free neighbours; allocation takes the
//! smallest free block that fits (best fit), in the region a `near` hint names first (a
//! bridge goes next to its loop where there is room). Of the regions that become empty, one
//! is kept for the next traces and the others are unmapped.
//!
//! The writable view is an alias of executable code: an attacker who can write anywhere in
//! the process can find it (as with any JIT's writable code); it exists only inside this
//! module and the address is never handed out.

use std::collections::BTreeMap;
use std::io;
use std::ptr::NonNull;
use std::sync::Mutex;

/// The page size of x86-64 Linux.
const PAGE: usize = 4096;

/// The code bytes of a shared region.
pub(crate) const REGION: usize = 4 << 20;

/// Alignment of each trace's code: a cache line (the code generator aligns loop bodies to
/// 64 bytes from the start of the code).
const ALIGN: usize = 64;

/// `memfd_create` flag asking for an executable memfd on kernels that can refuse them
/// (`vm.memfd_noexec`); older kernels reject the flag, and are then asked without it.
const MFD_EXEC: libc::c_uint = 0x0010;

/// One region: `len` bytes mapped read+execute at `exec` (then a guard page) and
/// read+write at `write`. Unmapped when dropped.
struct Region {
    exec: NonNull<u8>,
    write: NonNull<u8>,
    len: usize,
    /// Free blocks by offset: offset -> length (coalesced: no two adjacent).
    by_offset: BTreeMap<usize, usize>,
    /// The same free blocks by (length, offset), for best fit.
    by_size: BTreeMap<(usize, usize), ()>,
    /// Bytes allocated.
    used: usize,
}

// SAFETY: a `Region` owns its mappings alone; they are plain memory any thread may read,
// write (through `write`, under the code space's lock) or unmap.
unsafe impl Send for Region {}

impl Region {
    /// A region of `len` bytes (a whole number of pages), all free.
    fn map(len: usize) -> io::Result<Region> {
        let fd = memfd()?;
        // Closed when this function returns: the mappings keep the memory alive.
        let _fd = Fd(fd);
        // SAFETY: `fd` is a memfd this function owns.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let total = len.checked_add(PAGE).ok_or(io::ErrorKind::OutOfMemory)?;
        // Reserve the executable view and its guard page, inaccessible; then map the memfd
        // read+execute over the first `len` bytes.
        // SAFETY: a new anonymous mapping at an address the kernel chooses.
        let exec = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if exec == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let unmap_exec = Unmap(exec, total);
        // SAFETY: `MAP_FIXED` replaces the first `len` bytes of the reservation just made.
        let q = unsafe {
            libc::mmap(
                exec,
                len,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd,
                0,
            )
        };
        if q != exec {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new shared mapping of the memfd at an address the kernel chooses.
        let write = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if write == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        std::mem::forget(unmap_exec);
        let mut r = Region {
            exec: NonNull::new(exec.cast()).ok_or(io::ErrorKind::OutOfMemory)?,
            write: NonNull::new(write.cast()).ok_or(io::ErrorKind::OutOfMemory)?,
            len,
            by_offset: BTreeMap::new(),
            by_size: BTreeMap::new(),
            used: 0,
        };
        r.insert_free(0, len);
        Ok(r)
    }

    fn insert_free(&mut self, offset: usize, len: usize) {
        self.by_offset.insert(offset, len);
        self.by_size.insert((len, offset), ());
    }

    fn remove_free(&mut self, offset: usize, len: usize) {
        self.by_offset.remove(&offset);
        self.by_size.remove(&(len, offset));
    }

    /// The smallest free block of at least `size` bytes: (length, offset).
    fn best_fit(&self, size: usize) -> Option<(usize, usize)> {
        self.by_size.range((size, 0)..).next().map(|(&k, _)| k)
    }

    /// Take `size` bytes from the front of the free block (len, offset).
    fn take(&mut self, (len, offset): (usize, usize), size: usize) -> usize {
        self.remove_free(offset, len);
        if len > size {
            self.insert_free(offset + size, len - size);
        }
        self.used += size;
        offset
    }

    /// Return `size` bytes at `offset`, coalescing with free neighbours.
    fn free(&mut self, mut offset: usize, mut size: usize) {
        self.used -= size;
        if let Some((&before, &blen)) = self.by_offset.range(..offset).next_back() {
            if before + blen == offset {
                self.remove_free(before, blen);
                offset = before;
                size += blen;
            }
        }
        if let Some(&alen) = self.by_offset.get(&(offset + size)) {
            self.remove_free(offset + size, alen);
            size += alen;
        }
        self.insert_free(offset, size);
    }

    fn contains(&self, p: *const u8) -> bool {
        let start = self.exec.as_ptr() as usize;
        (start..start + self.len).contains(&(p as usize))
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: both views were mapped by `Region::map` and are owned by `self` alone; no
        // trace's code lives in the region any more (it is dropped only when empty).
        unsafe {
            libc::munmap(self.exec.as_ptr().cast(), self.len + PAGE);
            libc::munmap(self.write.as_ptr().cast(), self.len);
        }
    }
}

/// A file descriptor closed on drop.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by `self`.
        unsafe { libc::close(self.0) };
    }
}

/// A mapping unmapped on drop unless forgotten (cleanup on an error path).
struct Unmap(*mut libc::c_void, usize);

impl Drop for Unmap {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by the code that made this guard and nothing refers
        // to it yet.
        unsafe { libc::munmap(self.0, self.1) };
    }
}

/// A new memfd for code, executable where the kernel asks for it to be said.
fn memfd() -> io::Result<libc::c_int> {
    let name = c"tracejit-code";
    for flags in [libc::MFD_CLOEXEC | MFD_EXEC, libc::MFD_CLOEXEC] {
        // SAFETY: `name` is a NUL-terminated string.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        if fd >= 0 {
            return Ok(fd);
        }
    }
    Err(io::Error::last_os_error())
}

/// The regions of the process; `None` marks an unmapped region's slot (region indices stay
/// stable for the blocks that name them).
struct CodeSpace {
    regions: Vec<Option<Region>>,
}

static SPACE: Mutex<CodeSpace> = Mutex::new(CodeSpace { regions: Vec::new() });

/// Lock the code space (a panic while it was held leaves the free lists consistent: every
/// mutation completes before anything that can panic).
fn space() -> std::sync::MutexGuard<'static, CodeSpace> {
    SPACE.lock().unwrap_or_else(|e| e.into_inner())
}

impl CodeSpace {
    /// Allocate `size` bytes (a multiple of [`ALIGN`]), in the region holding `near` if it
    /// has room: (region index, offset).
    fn alloc(&mut self, size: usize, near: Option<*const u8>) -> io::Result<(usize, usize)> {
        let hinted = near.and_then(|p| {
            self.regions
                .iter()
                .position(|r| r.as_ref().is_some_and(|r| r.contains(p)))
        });
        if let Some(i) = hinted {
            let r = self.regions[i].as_mut().expect("found above");
            if let Some(fit) = r.best_fit(size) {
                return Ok((i, r.take(fit, size)));
            }
        }
        // The region whose best fit wastes least.
        let best = self
            .regions
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((r.as_ref()?.best_fit(size)?, i)))
            .min();
        if let Some((fit, i)) = best {
            let r = self.regions[i].as_mut().expect("found above");
            return Ok((i, r.take(fit, size)));
        }
        let mut r = Region::map(size.max(REGION).div_ceil(PAGE) * PAGE)?;
        let fit = r.best_fit(size).expect("a fresh region holds the block");
        let offset = r.take(fit, size);
        let i = match self.regions.iter().position(Option::is_none) {
            Some(i) => {
                self.regions[i] = Some(r);
                i
            }
            None => {
                self.regions.push(Some(r));
                self.regions.len() - 1
            }
        };
        Ok((i, offset))
    }

    /// Free a block. A region left empty is kept as the one spare region, unless there is
    /// one already (or it is a large trace's own region): then it is unmapped.
    fn free(&mut self, region: usize, offset: usize, size: usize) {
        let Some(r) = self.regions[region].as_mut() else {
            return;
        };
        r.free(offset, size);
        if r.used == 0 {
            let spare = self
                .regions
                .iter()
                .enumerate()
                .any(|(i, o)| i != region && o.as_ref().is_some_and(|o| o.used == 0));
            if spare || self.regions[region].as_ref().is_some_and(|r| r.len > REGION) {
                self.regions[region] = None;
            }
        }
    }
}

/// Executable memory holding one trace's code (or one bridge's), freed when dropped.
pub(crate) struct CodeMemory {
    /// The first code byte, in the executable view.
    exec: NonNull<u8>,
    /// The same byte in the writable view.
    write: NonNull<u8>,
    /// Code bytes.
    len: usize,
    /// The block: its region, offset and size (`len` rounded up to [`ALIGN`]).
    region: u32,
    offset: usize,
    size: usize,
    /// What the debugger and profilers were told about the code (`debuginfo`); undone
    /// before the block is freed for reuse.
    registration: Option<crate::debuginfo::Registration>,
}

// SAFETY: the block is owned by this value alone; its bytes are only read through `exec`
// (by anyone) and written through `write` by `patch`, which takes `&mut self`.
unsafe impl Send for CodeMemory {}
// SAFETY: `&CodeMemory` only allows reading the code.
unsafe impl Sync for CodeMemory {}

impl CodeMemory {
    /// `code` in executable memory.
    pub(crate) fn new(code: &[u8]) -> io::Result<CodeMemory> {
        CodeMemory::new_near(code, None)
    }

    /// `code` in executable memory, in the region of `near` if it has room.
    pub(crate) fn new_near(code: &[u8], near: Option<*const u8>) -> io::Result<CodeMemory> {
        let size = code.len().max(1).div_ceil(ALIGN) * ALIGN;
        let mut space = space();
        let (region, offset) = space.alloc(size, near)?;
        let r = space.regions[region].as_ref().expect("just allocated in it");
        // SAFETY: `offset + size <= r.len`: the block lies inside both views.
        let (exec, write) = unsafe { (r.exec.add(offset), r.write.add(offset)) };
        // SAFETY: the block is this trace's alone (just allocated), writable through the
        // writable view, and holds `code.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), write.as_ptr(), code.len()) };
        Ok(CodeMemory {
            exec,
            write,
            len: code.len(),
            region: region as u32,
            offset,
            size,
            registration: None,
        })
    }

    /// Keep `reg` until the code is freed.
    pub(crate) fn set_registration(&mut self, reg: crate::debuginfo::Registration) {
        self.registration = Some(reg);
    }

    /// The first byte of the code.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.exec.as_ptr()
    }

    /// The size of the code in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Overwrite the code bytes at `at..at + bytes.len()` (inside the code), through the
    /// writable view.
    ///
    /// # Safety
    /// No thread may run the patched bytes while they are written.
    pub(crate) unsafe fn patch(&mut self, at: usize, bytes: &[u8]) -> io::Result<()> {
        assert!(at + bytes.len() <= self.len, "a patch inside the code");
        // SAFETY: the range lies inside this trace's block (asserted), which nothing else
        // writes; the caller guarantees nothing runs those bytes meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.write.as_ptr().add(at), bytes.len()) };
        Ok(())
    }

    /// The code.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: the executable view is readable for as long as `self` owns the block, which
        // holds `len` bytes of code, written only through `patch` (`&mut self`).
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        // The debugger and profilers forget the code before its memory can be reused.
        self.registration.take();
        space().free(self.region as usize, self.offset, self.size);
    }
}

/// The code space's footprint: (regions mapped, bytes of their code pages, bytes allocated
/// to live code).
pub(crate) fn footprint() -> (usize, usize, usize) {
    let s = space();
    let live = s.regions.iter().flatten();
    (
        live.clone().count(),
        live.clone().map(|r| r.len).sum(),
        live.map(|r| r.used).sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Best fit, splitting and coalescing in one region, against a model of its bytes.
    #[test]
    fn a_region_allocates_best_fit_and_coalesces() {
        let mut r = Region::map(4 * PAGE).unwrap();
        let a = r.take(r.best_fit(64).unwrap(), 64);
        let b = r.take(r.best_fit(128).unwrap(), 128);
        let c = r.take(r.best_fit(64).unwrap(), 64);
        assert_eq!((a, b, c), (0, 64, 192), "packed from the front");
        r.free(b, 128);
        // A 96-byte request takes the 128-byte hole (the smallest that fits), not the tail.
        assert_eq!(r.take(r.best_fit(96).unwrap(), 96), 64);
        r.free(64, 96);
        r.free(a, 64);
        r.free(c, 64);
        assert_eq!(r.by_offset.len(), 1, "everything coalesced: {:?}", r.by_offset);
        assert_eq!(r.by_offset.get(&0), Some(&(4 * PAGE)));
        assert_eq!((r.used, r.by_size.len()), (0, 1));
        assert!(r.best_fit(4 * PAGE + 1).is_none());
    }

    /// The regions of `/proc/self/maps` as (start, end, permissions).
    pub(crate) fn regions() -> Vec<(usize, usize, String)> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .map(|l| {
                let mut f = l.split_whitespace();
                let (range, perms) = (f.next().unwrap(), f.next().unwrap());
                let (a, b) = range.split_once('-').unwrap();
                (
                    usize::from_str_radix(a, 16).unwrap(),
                    usize::from_str_radix(b, 16).unwrap(),
                    perms.to_string(),
                )
            })
            .collect()
    }

    /// Code is read+execute, copied in exactly, patched through the other view, followed by
    /// a guard page at the end of its region; no mapping of the process is writable and
    /// executable.
    #[test]
    fn code_is_executable_never_writable_and_guarded() {
        let mut live = Vec::new();
        for len in [1, 15, 16, 17, PAGE, 3 * PAGE + 5, REGION + 1] {
            let code: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut m = CodeMemory::new(&code).unwrap();
            assert_eq!(m.bytes(), &code[..], "the code is copied in");
            assert_eq!(m.as_ptr() as usize % ALIGN, 0);
            // SAFETY: nothing runs this code.
            unsafe { m.patch(len - 1, &[0xcc]).unwrap() };
            assert_eq!(
                m.bytes()[len - 1],
                0xcc,
                "the patch is seen through the executable view"
            );
            let start = m.as_ptr() as usize;
            let maps = regions();
            let region = maps.iter().find(|&&(a, b, _)| a <= start && start < b).unwrap();
            assert_eq!(&region.2[..3], "r-x", "{len} bytes: {region:?}");
            let guard = maps.iter().find(|&&(a, _, _)| a == region.1).unwrap();
            assert_eq!(guard.2, "---p", "{len} bytes: guard page {guard:?}");
            live.push(m);
        }
        let wx: Vec<_> = regions()
            .into_iter()
            .filter(|r| r.2.contains('w') && r.2.contains('x'))
            .collect();
        assert!(wx.is_empty(), "writable and executable: {wx:?}");
    }
}
