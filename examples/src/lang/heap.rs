//! The interpreter's heap: real memory that JIT-compiled code reads and writes directly.
//!
//! # Object layouts (they match the descriptors the recorder puts into traces)
//!
//! ```text
//! int box    [ class = INT_CLASS   | value: i64      ]   16 bytes
//! float box  [ class = FLOAT_CLASS | value: f64 bits ]   16 bytes
//! pair       [ class = PAIR_CLASS  | first: ref | second: ref ]  24 bytes
//! array      [ class = ARRAY_CLASS | length: i64 | item 0: i64 | item 1 ... ]  16 + 8n bytes
//! none       [ class = NONE_CLASS  | 0 ]                 16 bytes (one prebuilt object)
//! ```
//! The class word is at offset 0 (what `guard_class` reads), an int or float box keeps its
//! value at offset 8, arrays keep their length at offset 8 and items from offset 16 (the
//! defaults of `trace_ir::descr`). Arrays hold unboxed integers, like PyPy's integer list
//! strategy.
//!
//! # Memory management
//!
//! An arena: objects are bump-allocated in 1 MiB chunks and never freed or moved until the
//! [`Heap`] is dropped at the end of a run. That keeps every address handed to native code
//! valid for the whole run, at the price of memory growth proportional to the number of
//! allocations (which is exactly what the optimizer's allocation removal reduces).

/// Class word of int boxes.
pub const INT_CLASS: u64 = 0x1_0010;
/// Class word of float boxes.
pub const FLOAT_CLASS: u64 = 0x1_0020;
/// Class word of pairs.
pub const PAIR_CLASS: u64 = 0x1_0030;
/// Class word of integer arrays.
pub const ARRAY_CLASS: u64 = 0x1_0040;
/// Class word of the `None` object.
pub const NONE_CLASS: u64 = 0x1_0050;

/// Offset of the value of an int or float box.
pub const BOX_VALUE_OFFSET: i64 = 8;
/// Offset of a pair's first element.
pub const PAIR_FIRST_OFFSET: i64 = 8;
/// Offset of a pair's second element.
pub const PAIR_SECOND_OFFSET: i64 = 16;
/// Offset of an array's length word.
pub const ARRAY_LEN_OFFSET: i64 = 8;
/// Offset of an array's first item.
pub const ARRAY_ITEMS_OFFSET: i64 = 16;
/// Size of a box (int, float, none).
pub const BOX_SIZE: usize = 16;
/// Size of a pair.
pub const PAIR_SIZE: usize = 24;

const CHUNK_WORDS: usize = 1 << 17; // 1 MiB

/// The arena. Every address it returns stays valid (and zero-initialised at allocation) until
/// the heap is dropped.
pub struct Heap {
    chunks: Vec<Box<[u64]>>,
    /// Start address → end address of every chunk (for [`Heap::contains`]).
    ranges: std::collections::BTreeMap<u64, u64>,
    /// Next free word in the last chunk.
    next: usize,
    /// The prebuilt `None` object.
    none: u64,
    /// Number of objects allocated so far (by the interpreter and by native code).
    pub allocations: u64,
}

impl Default for Heap {
    fn default() -> Self {
        Heap::new()
    }
}

impl std::fmt::Debug for Heap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Heap {{ chunks: {}, allocations: {} }}",
            self.chunks.len(),
            self.allocations
        )
    }
}

impl Heap {
    /// An empty heap with the `None` object.
    pub fn new() -> Heap {
        let mut h = Heap {
            chunks: Vec::new(),
            ranges: Default::default(),
            next: CHUNK_WORDS,
            none: 0,
            allocations: 0,
        };
        h.none = h.alloc(BOX_SIZE);
        h.store(h.none, 0, NONE_CLASS);
        h
    }

    /// Allocate `size` bytes (rounded up to 8), zeroed, 8-byte aligned. Never fails short of
    /// the process running out of memory.
    pub fn alloc(&mut self, size: usize) -> u64 {
        self.allocations += 1;
        let words = size.div_ceil(8).max(1);
        if words > CHUNK_WORDS / 4 {
            // A large object gets a chunk of its own; the current chunk stays in use.
            let chunk = vec![0u64; words].into_boxed_slice();
            let addr = chunk.as_ptr() as u64;
            self.ranges.insert(addr, addr + 8 * words as u64);
            self.chunks.insert(self.chunks.len().saturating_sub(1), chunk);
            return addr;
        }
        if self.next + words > CHUNK_WORDS {
            let chunk = vec![0u64; CHUNK_WORDS].into_boxed_slice();
            let start = chunk.as_ptr() as u64;
            self.ranges.insert(start, start + 8 * CHUNK_WORDS as u64);
            self.chunks.push(chunk);
            self.next = 0;
        }
        let chunk = self.chunks.last_mut().expect("a chunk was just pushed");
        let addr = chunk[self.next..].as_ptr() as u64;
        self.next += words;
        addr
    }

    /// Bytes reserved by the arena so far.
    pub fn reserved_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len() * 8).sum()
    }

    /// Whether `addr` points into memory of this heap (used to validate values coming back
    /// from native code before they are dereferenced).
    pub fn contains(&self, addr: u64) -> bool {
        addr.is_multiple_of(8)
            && self
                .ranges
                .range(..=addr)
                .next_back()
                .is_some_and(|(_, &end)| addr < end)
    }

    /// The prebuilt `None` object.
    pub fn none(&self) -> u64 {
        self.none
    }

    /// Read the word at `obj + offset`.
    #[inline]
    pub fn load(&self, obj: u64, offset: i64) -> u64 {
        debug_assert!(obj != 0 && obj.is_multiple_of(8));
        // SAFETY: every object address the interpreter holds was returned by `alloc` of this
        // heap (or by native code through the same allocator), the arena never frees or
        // moves memory while the heap lives, and callers only pass offsets inside the
        // object's layout (checked against the class word and, for arrays, the length).
        unsafe { *((obj as i64 + offset) as *const u64) }
    }

    /// Write the word at `obj + offset`.
    #[inline]
    pub fn store(&mut self, obj: u64, offset: i64, value: u64) {
        debug_assert!(obj != 0 && obj.is_multiple_of(8));
        // SAFETY: as for `load`; `&mut self` makes the interpreter the only writer while it
        // runs (native code runs only while the interpreter waits for it).
        unsafe { *((obj as i64 + offset) as *mut u64) = value }
    }

    /// The class word of an object.
    #[inline]
    pub fn class_of(&self, obj: u64) -> u64 {
        self.load(obj, 0)
    }

    /// A new int box.
    pub fn new_int(&mut self, v: i64) -> u64 {
        let p = self.alloc(BOX_SIZE);
        self.store(p, 0, INT_CLASS);
        self.store(p, BOX_VALUE_OFFSET, v as u64);
        p
    }

    /// A new float box.
    pub fn new_float(&mut self, v: f64) -> u64 {
        let p = self.alloc(BOX_SIZE);
        self.store(p, 0, FLOAT_CLASS);
        self.store(p, BOX_VALUE_OFFSET, v.to_bits());
        p
    }

    /// A new pair.
    pub fn new_pair(&mut self, a: u64, b: u64) -> u64 {
        let p = self.alloc(PAIR_SIZE);
        self.store(p, 0, PAIR_CLASS);
        self.store(p, PAIR_FIRST_OFFSET, a);
        self.store(p, PAIR_SECOND_OFFSET, b);
        p
    }

    /// A new zero-filled integer array of `len` items.
    pub fn new_array(&mut self, len: usize) -> u64 {
        let p = self.alloc(ARRAY_ITEMS_OFFSET as usize + 8 * len);
        self.store(p, 0, ARRAY_CLASS);
        self.store(p, ARRAY_LEN_OFFSET, len as u64);
        p
    }

    /// The value of an int box (the caller checked the class).
    #[inline]
    pub fn int_value(&self, obj: u64) -> i64 {
        self.load(obj, BOX_VALUE_OFFSET) as i64
    }

    /// The value of a float box (the caller checked the class).
    #[inline]
    pub fn float_value(&self, obj: u64) -> f64 {
        f64::from_bits(self.load(obj, BOX_VALUE_OFFSET))
    }

    /// The length of an array (the caller checked the class).
    #[inline]
    pub fn array_len(&self, obj: u64) -> usize {
        self.load(obj, ARRAY_LEN_OFFSET) as usize
    }

    /// Item `i` of an array (the caller checked the class and the bounds).
    #[inline]
    pub fn array_get(&self, obj: u64, i: usize) -> i64 {
        self.load(obj, ARRAY_ITEMS_OFFSET + 8 * i as i64) as i64
    }

    /// Store item `i` of an array (the caller checked the class and the bounds).
    #[inline]
    pub fn array_set(&mut self, obj: u64, i: usize, v: i64) {
        self.store(obj, ARRAY_ITEMS_OFFSET + 8 * i as i64, v as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_have_the_documented_layout() {
        let mut h = Heap::new();
        let i = h.new_int(-42);
        assert_eq!(h.class_of(i), INT_CLASS);
        assert_eq!(h.int_value(i), -42);
        let f = h.new_float(1.5);
        assert_eq!(h.class_of(f), FLOAT_CLASS);
        assert_eq!(h.float_value(f), 1.5);
        let a = h.new_array(3);
        assert_eq!(h.array_len(a), 3);
        h.array_set(a, 2, 7);
        assert_eq!(h.array_get(a, 2), 7);
        assert_eq!(h.array_get(a, 0), 0);
        let p = h.new_pair(i, f);
        assert_eq!(h.load(p, PAIR_SECOND_OFFSET), f);
        assert!(h.contains(p) && !h.contains(12345));
    }

    #[test]
    fn addresses_stay_valid_across_chunks() {
        let mut h = Heap::new();
        let first = h.new_int(1);
        let mut last = 0;
        for k in 0..300_000 {
            last = h.new_int(k);
        }
        let big = h.new_array(100_000);
        assert_eq!(h.int_value(first), 1);
        assert_eq!(h.int_value(last), 299_999);
        assert_eq!(h.array_len(big), 100_000);
        assert!(h.contains(big) && h.contains(last));
    }
}
