//! GDB's JIT compilation interface ("JIT Compilation Interface" in the GDB manual): the
//! process exports `__jit_debug_descriptor`, a list of in-memory object files, and calls
//! `__jit_debug_register_code` after each change; GDB keeps a breakpoint in that function
//! and reads the entry named by the descriptor's `relevant_entry` and `action_flag`.
//!
//! GDB finds both symbols by name in the executable's symbol table (a stripped binary
//! hides them). The list is process-wide and guarded by [`LIST`]; an entry stays linked
//! until its [`Entry`] is dropped.
//!
//! The crate's own unit tests link two copies of it (theirs, and the library that
//! `trace-interp` depends on): there the two symbols keep their mangled names, so that the
//! copies do not define the same symbol twice. The GDB test (`tests/debuginfo.rs`) links one.

use std::ptr::{addr_of_mut, null_mut};
use std::sync::Mutex;

/// `jit_actions_t`.
const JIT_REGISTER_FN: u32 = 1;
const JIT_UNREGISTER_FN: u32 = 2;

/// `struct jit_code_entry`.
#[repr(C)]
pub struct JitCodeEntry {
    next_entry: *mut JitCodeEntry,
    prev_entry: *mut JitCodeEntry,
    symfile_addr: *const u8,
    symfile_size: u64,
}

/// `struct jit_descriptor`, the layout GDB reads.
#[repr(C)]
pub struct JitDescriptor {
    version: u32,
    action_flag: u32,
    relevant_entry: *mut JitCodeEntry,
    first_entry: *mut JitCodeEntry,
}

/// The descriptor GDB reads (by this name); written only while [`LIST`] is held.
#[cfg_attr(not(test), no_mangle)]
#[allow(non_upper_case_globals)]
pub static mut __jit_debug_descriptor: JitDescriptor = JitDescriptor {
    version: 1,
    action_flag: 0,
    relevant_entry: null_mut(),
    first_entry: null_mut(),
};

/// The function GDB sets its breakpoint in (by this name): called after each change of
/// [`__jit_debug_descriptor`]. Never inlined, and its body is an opaque empty `asm!` block,
/// so neither the function nor its calls are optimized away.
#[cfg_attr(not(test), no_mangle)]
#[inline(never)]
pub extern "C" fn __jit_debug_register_code() {
    // SAFETY: an empty assembly block: it reads and writes nothing.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
}

/// Serializes every change of the descriptor and the list.
static LIST: Mutex<()> = Mutex::new(());

/// An object file linked into GDB's list; unlinked when dropped.
pub(crate) struct Entry {
    entry: *mut JitCodeEntry,
    _object: Box<[u8]>,
}

// SAFETY: the entry is reached only through the descriptor's list, which every access
// changes while holding `LIST`; the object bytes are never written after registration.
unsafe impl Send for Entry {}
// SAFETY: `&Entry` gives no access to anything (see `Send`).
unsafe impl Sync for Entry {}

impl Entry {
    /// Link `object` into the list and tell GDB.
    pub(crate) fn register(object: Vec<u8>) -> Entry {
        let object = object.into_boxed_slice();
        let entry = Box::into_raw(Box::new(JitCodeEntry {
            next_entry: null_mut(),
            prev_entry: null_mut(),
            symfile_addr: object.as_ptr(),
            symfile_size: object.len() as u64,
        }));
        let _held = LIST.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `LIST` is held, so nothing else reads or writes the descriptor or the
        // entries; `entry` is a fresh allocation and `first` (if any) a live entry of the
        // list (entries leave it before they are freed).
        unsafe {
            let d = addr_of_mut!(__jit_debug_descriptor);
            let first = (*d).first_entry;
            (*entry).next_entry = first;
            if !first.is_null() {
                (*first).prev_entry = entry;
            }
            (*d).first_entry = entry;
            (*d).relevant_entry = entry;
            (*d).action_flag = JIT_REGISTER_FN;
        }
        __jit_debug_register_code();
        Entry { entry, _object: object }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let _held = LIST.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `LIST` is held; `self.entry` is linked in the list (registered, not yet
        // unlinked) and its neighbours are live entries.
        unsafe {
            let d = addr_of_mut!(__jit_debug_descriptor);
            let e = self.entry;
            let (prev, next) = ((*e).prev_entry, (*e).next_entry);
            if prev.is_null() {
                (*d).first_entry = next;
            } else {
                (*prev).next_entry = next;
            }
            if !next.is_null() {
                (*next).prev_entry = prev;
            }
            (*d).relevant_entry = e;
            (*d).action_flag = JIT_UNREGISTER_FN;
        }
        __jit_debug_register_code();
        // SAFETY: unlinked above, under the lock; GDB read it during the call. Allocated by
        // `Box::into_raw` in `register`, freed once here.
        unsafe { drop(Box::from_raw(self.entry)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries of the list, first to last, checking the back links.
    fn list() -> Vec<*const u8> {
        let _held = LIST.lock().unwrap();
        let mut out = Vec::new();
        // SAFETY: `LIST` is held; the list holds live entries.
        unsafe {
            let mut e = (*addr_of_mut!(__jit_debug_descriptor)).first_entry;
            let mut prev = null_mut();
            while !e.is_null() {
                assert_eq!((*e).prev_entry, prev, "back link");
                out.push((*e).symfile_addr);
                prev = e;
                e = (*e).next_entry;
            }
        }
        out
    }

    /// The objects of the list that contain `needle`.
    fn objects_containing(needle: &[u8]) -> Vec<Vec<u8>> {
        let _held = LIST.lock().unwrap();
        let mut out = Vec::new();
        // SAFETY: `LIST` is held; the list holds live entries, whose objects live at least
        // as long as they are linked.
        unsafe {
            let mut e = (*addr_of_mut!(__jit_debug_descriptor)).first_entry;
            while !e.is_null() {
                let obj = std::slice::from_raw_parts((*e).symfile_addr, (*e).symfile_size as usize);
                if obj.windows(needle.len()).any(|w| w == needle) {
                    out.push(obj.to_vec());
                }
                e = (*e).next_entry;
            }
        }
        out
    }

    /// A trace compiled with `gdb_jit` has one ELF object in the list, naming its symbol,
    /// until the compiled trace is dropped; without `gdb_jit`, none.
    #[test]
    fn compiled_code_is_listed_until_dropped() {
        use trace_ir::{Kind, TraceBuilder};
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        b.finish(&[x]);
        let mut t = b.build().unwrap();
        t.info.name = "gdb unit listed".into();
        let plain = crate::CompileOptions {
            log_asm: false,
            perf_map: false,
            ..Default::default()
        };
        let needle = b"tracejit_gdb_unit_listed_";
        let c = crate::compile(&t, &plain).unwrap();
        assert!(objects_containing(needle).is_empty(), "not registered without gdb_jit");
        drop(c);
        let c = crate::compile(&t, &crate::CompileOptions { gdb_jit: true, ..plain }).unwrap();
        let objs = objects_containing(needle);
        assert_eq!(objs.len(), 1);
        assert_eq!(&objs[0][..4], b"\x7fELF");
        drop(c);
        assert!(objects_containing(needle).is_empty(), "unregistered when freed");
    }

    /// Registering links an entry at the head naming the object; dropping unlinks it from
    /// the head, the middle or the tail, keeping both directions of the list consistent.
    #[test]
    fn entries_link_and_unlink_in_any_order() {
        let objects: Vec<Entry> = (0..4).map(|i| Entry::register(vec![i; 8])).collect();
        let addr: Vec<*const u8> = objects.iter().map(|e| e._object.as_ptr()).collect();
        let mine = |l: Vec<*const u8>| -> Vec<*const u8> { l.into_iter().filter(|p| addr.contains(p)).collect() };
        assert_eq!(mine(list()), vec![addr[3], addr[2], addr[1], addr[0]]);
        let mut objects: Vec<Option<Entry>> = objects.into_iter().map(Some).collect();
        objects[2].take();
        assert_eq!(mine(list()), vec![addr[3], addr[1], addr[0]]);
        objects[3].take();
        assert_eq!(mine(list()), vec![addr[1], addr[0]]);
        objects[0].take();
        assert_eq!(mine(list()), vec![addr[1]]);
        let action = {
            let _held = LIST.lock().unwrap();
            // SAFETY: `LIST` is held: nothing writes the descriptor meanwhile.
            unsafe { (*addr_of_mut!(__jit_debug_descriptor)).action_flag }
        };
        assert_eq!(action, JIT_UNREGISTER_FN, "the last change was an unregistration");
        objects[1].take();
        assert!(mine(list()).is_empty());
    }
}
