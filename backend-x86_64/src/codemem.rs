//! Executable memory for compiled traces: one private mapping per trace, never writable and
//! executable at the same time, recycled through a process-wide code cache.
//!
//! Each mapping is the trace's code pages followed by one inaccessible guard page. The
//! guard page does two things: a jump past the end of the code faults instead of running
//! whatever follows, and two code mappings are never adjacent. The second matters for speed:
//! the kernel merges adjacent mappings with the same protection into one region, and every
//! later protection switch of one trace's pages then splits that region and merges it
//! again. With the guard pages a switch changes one region's flags in place (measured: the
//! split and merge were 40% of the kernel time of compiling, which is 5-7% of the whole).

use std::io;
use std::ptr::NonNull;

/// The page size of x86-64 Linux.
const PAGE: usize = 4096;

/// Code sizes (bytes) above which a fresh mapping is populated by `mmap` itself.
const POPULATE_FROM: usize = 8192;

/// One mapping: `len` bytes of code pages (a whole number of pages) and a guard page after
/// them. Unmapped when dropped.
pub(crate) struct Pages {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Pages` owns its mapping alone (no other `Pages` or Rust reference covers it); the
// mapping is plain memory that any thread may read, protect or unmap.
unsafe impl Send for Pages {}
// SAFETY: `&Pages` only allows reading the pages (see `Send`).
unsafe impl Sync for Pages {}

impl Pages {
    /// A new mapping with room for `len` bytes of code (at least one page), read+write,
    /// populated by the kernel up front when `populate` (one kernel entry instead of a page
    /// fault per page while the code is copied in).
    pub(crate) fn map(len: usize, populate: bool) -> io::Result<Pages> {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        let total = len.checked_add(PAGE).ok_or(io::ErrorKind::OutOfMemory)?;
        // Reserve code and guard pages, inaccessible; then map the code pages read+write
        // over the reservation (populated there, so the guard page is never populated).
        // SAFETY: a new anonymous mapping at an address the kernel chooses: no existing
        // memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // From here on `Drop` unmaps the reservation whatever fails.
        let pages = Pages {
            ptr: NonNull::new(p.cast()).ok_or(io::ErrorKind::OutOfMemory)?,
            len,
        };
        let populate = if populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: `MAP_FIXED` replaces the first `len` bytes of the reservation just made,
        // which nothing else refers to.
        let q = unsafe {
            libc::mmap(
                p,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | populate,
                -1,
                0,
            )
        };
        if q != p {
            return Err(io::Error::last_os_error());
        }
        Ok(pages)
    }

    /// The size of the code pages in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Switch the code pages to read+write.
    ///
    /// # Safety
    /// No code in the pages may run while they are writable (nothing may run them at all
    /// until they are switched back with [`Pages::make_exec`]).
    unsafe fn make_writable(&mut self) -> io::Result<()> {
        self.protect(libc::PROT_READ | libc::PROT_WRITE)
    }

    /// Switch the code pages to read+execute.
    fn make_exec(&mut self) -> io::Result<()> {
        self.protect(libc::PROT_READ | libc::PROT_EXEC)
    }

    fn protect(&mut self, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is the code pages of this mapping, which `self` owns; changing
        // their protection affects no other memory (the guard page stays inaccessible).
        match unsafe { libc::mprotect(self.ptr.as_ptr().cast(), self.len, prot) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping (code and guard pages) was made by `Pages::map` and is owned
        // by `self` alone; nothing refers to it after this.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len + PAGE) };
    }
}

/// Executable memory holding one trace's code, returned to the code cache when dropped.
///
/// A fresh mapping is created writable (populated up front when the code is larger than
/// two pages), filled, then switched to read+execute. The code cache ([`CODE_CACHE`]) keeps
/// the mappings of dropped traces, as PyPy's and LuaJIT's machine-code managers keep theirs:
/// the next trace of a similar size takes one, switches it back to read+write (nothing can
/// run it any more: its trace is gone, and the pages are its alone), copies its code in and
/// switches it to read+execute. That is two `mprotect` calls instead of two `mmap` (one
/// populating), an `mprotect` and a `munmap`.
pub(crate) struct CodeMemory {
    /// Always `Some` but while being dropped.
    pages: Option<Pages>,
    len: usize,
    /// What the debugger and profilers were told about the code (`debuginfo`); undone
    /// before the pages go back to the cache.
    registration: Option<crate::debuginfo::Registration>,
}

/// The mappings of dropped traces, read+execute, waiting for reuse by [`CodeMemory::new`].
static CODE_CACHE: std::sync::Mutex<CodeCache> = std::sync::Mutex::new(CodeCache {
    maps: Vec::new(),
    bytes: 0,
});

/// The code cache's contents: at most [`CodeCache::MAX_MAPS`] mappings and
/// [`CodeCache::MAX_BYTES`] bytes of code pages; a dropped trace's mapping beyond that is
/// unmapped.
pub(crate) struct CodeCache {
    pub(crate) maps: Vec<Pages>,
    pub(crate) bytes: usize,
}

impl CodeCache {
    pub(crate) const MAX_MAPS: usize = 64;
    pub(crate) const MAX_BYTES: usize = 16 << 20;

    /// The smallest cached mapping that holds `len` bytes without wasting more than half of
    /// itself, taken out of the cache.
    pub(crate) fn take(&mut self, len: usize) -> Option<Pages> {
        let fits = |m: &Pages| m.len() >= len && m.len() <= 2 * len.max(PAGE);
        let (i, _) = self
            .maps
            .iter()
            .enumerate()
            .filter(|(_, m)| fits(m))
            .min_by_key(|(_, m)| m.len())?;
        let m = self.maps.swap_remove(i);
        self.bytes -= m.len();
        Some(m)
    }

    /// Keep `map` for reuse if there is room (else it is unmapped here).
    pub(crate) fn give(&mut self, map: Pages) {
        if self.maps.len() < Self::MAX_MAPS && self.bytes + map.len() <= Self::MAX_BYTES {
            self.bytes += map.len();
            self.maps.push(map);
        }
    }
}

impl CodeMemory {
    /// `code` in executable memory.
    pub(crate) fn new(code: &[u8]) -> io::Result<CodeMemory> {
        let cached = CODE_CACHE.lock().ok().and_then(|mut c| c.take(code.len()));
        // SAFETY: a cached mapping belonged to a dropped trace: nothing runs it. One that
        // cannot be made writable is dropped (unmapped) here.
        let reused = cached.and_then(|mut m| unsafe { m.make_writable() }.ok().map(|()| m));
        let mut pages = match reused {
            Some(m) => m,
            None => Pages::map(code.len(), code.len() > POPULATE_FROM)?,
        };
        // SAFETY: the code pages are read+write and `pages.len() >= code.len()` (a fresh
        // mapping is rounded up, a cached one was chosen to fit); nothing else refers to them.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), pages.ptr.as_ptr(), code.len()) };
        pages.make_exec()?;
        Ok(CodeMemory {
            pages: Some(pages),
            len: code.len(),
            registration: None,
        })
    }

    /// Keep `reg` until the code is freed.
    pub(crate) fn set_registration(&mut self, reg: crate::debuginfo::Registration) {
        self.registration = Some(reg);
    }

    fn pages(&self) -> &Pages {
        self.pages.as_ref().expect("code memory is mapped until dropped")
    }

    /// The first byte of the code.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.pages().ptr.as_ptr()
    }

    /// The size of the code in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Overwrite the code bytes at `at..at + bytes.len()` (inside the code): the pages are
    /// made writable, written, and made executable again.
    ///
    /// # Safety
    /// No thread may run this code while it is patched.
    pub(crate) unsafe fn patch(&mut self, at: usize, bytes: &[u8]) -> io::Result<()> {
        assert!(at + bytes.len() <= self.len, "a patch inside the code");
        let pages = self.pages.as_mut().expect("code memory is mapped until dropped");
        // SAFETY: the caller guarantees nothing runs the code while it is writable.
        unsafe { pages.make_writable()? };
        // SAFETY: the range lies inside the code pages (asserted), which are writable now and
        // which nothing else refers to.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), pages.ptr.as_ptr().add(at), bytes.len()) };
        pages.make_exec()
    }

    /// The code.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: the pages are readable (read+execute) for as long as `self` lives, hold
        // `len` bytes of code, and are never written while `self` owns them.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        // The debugger and profilers forget the code before its memory can be reused.
        self.registration.take();
        if let (Some(pages), Ok(mut cache)) = (self.pages.take(), CODE_CACHE.lock()) {
            cache.give(pages);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code cache keeps dropped mappings up to its limits and hands out the smallest one
    /// that holds the code without wasting more than half of itself.
    #[test]
    fn code_cache_reuses_fitting_mappings_within_its_limits() {
        let map = |len: usize| {
            let mut m = Pages::map(len, false).unwrap();
            m.make_exec().unwrap();
            m
        };
        let mut cache = CodeCache {
            maps: Vec::new(),
            bytes: 0,
        };
        cache.give(map(3 * PAGE));
        cache.give(map(16 * PAGE));
        cache.give(map(5 * PAGE - 100));
        assert_eq!(cache.bytes, 24 * PAGE, "code pages are whole pages");
        assert!(cache.take(17 * PAGE).is_none(), "nothing holds 17 pages");
        assert!(cache.take(100).is_none(), "3 pages waste more than half on 100 bytes");
        assert_eq!(
            cache.take(2 * PAGE + 1).map(|m| m.len()),
            Some(3 * PAGE),
            "the smallest that fits"
        );
        assert!(cache.take(2 * PAGE + 1).is_none(), "5 pages waste more than half");
        assert_eq!(cache.take(3 * PAGE).map(|m| m.len()), Some(5 * PAGE));
        assert_eq!(cache.take(9 * PAGE).map(|m| m.len()), Some(16 * PAGE));
        assert_eq!((cache.maps.len(), cache.bytes), (0, 0));
        for _ in 0..CodeCache::MAX_MAPS + 5 {
            cache.give(map(PAGE));
        }
        assert_eq!(cache.maps.len(), CodeCache::MAX_MAPS, "at most MAX_MAPS mappings");
        let mut big = CodeCache {
            maps: Vec::new(),
            bytes: 0,
        };
        big.give(map(CodeCache::MAX_BYTES / 2));
        big.give(map(CodeCache::MAX_BYTES / 2 + PAGE));
        assert_eq!(big.bytes, CodeCache::MAX_BYTES / 2, "at most MAX_BYTES bytes");
    }

    /// The regions of `/proc/self/maps` as (start, end, permissions).
    fn regions() -> Vec<(usize, usize, String)> {
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

    /// Code memory is read+execute, in a region of its own that ends where its code pages
    /// end, followed by an inaccessible guard page: fresh and recycled mappings alike, small
    /// and populated ones, with other code memory mapped around them.
    #[test]
    fn code_pages_are_executable_alone_in_their_region_and_guarded() {
        let mut live = Vec::new();
        for round in 0..3 {
            for len in [1, PAGE, PAGE + 1, 3 * PAGE, POPULATE_FROM + 1, 40_000] {
                let code: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
                let m = CodeMemory::new(&code).unwrap();
                assert_eq!(m.bytes(), &code[..], "the code is copied in");
                let start = m.as_ptr() as usize;
                let pages = m.pages().len();
                assert!(pages >= len && pages.is_multiple_of(PAGE));
                let r = regions();
                let code_region = r.iter().find(|&&(a, b, _)| a <= start && start < b).unwrap();
                assert_eq!(
                    (code_region.0, code_region.1, code_region.2.as_str()),
                    (start, start + pages, "r-xp"),
                    "{len} bytes: the code pages alone, read+execute"
                );
                let guard = r.iter().find(|&&(a, _, _)| a == start + pages).unwrap();
                assert!(
                    guard.1 >= start + pages + PAGE && guard.2 == "---p",
                    "{len} bytes: guard page {guard:?}"
                );
                // Every other mapping goes back to the cache and is reused next round.
                if len % 2 == 1 {
                    live.push(m);
                }
            }
        }
    }
}
