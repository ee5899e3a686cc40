//! Virtual strings: `newstr`/`newunicode` of a constant length start virtual, as arrays do;
//! their characters (`strsetitem`, `strgetitem` at constant indexes), their length
//! (`strlen`) and copies between two virtual strings (`copystrcontent`) are followed without
//! memory; anything else a virtual string meets materializes it (its allocation and a
//! `strsetitem` per character written), and a guard's resume data describes it as
//! `$k = newstr(n) [i]: c` when it is still virtual there.

use super::pure::Key;
use super::{Pass, MAX_VIRTUAL_ARRAY};
use crate::Reason;
use smallvec::SmallVec;
use trace_ir::descr::string_char_size;
use trace_ir::{Op, Opcode, Value, VirtualField, VirtualKind};

/// Byte strings or unicode strings (4-byte code points): which ops work on which.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct StrKind {
    unicode: bool,
}

impl StrKind {
    /// The kind of string op `opcode` works on (a byte string for any non-string op).
    fn of(opcode: Opcode) -> StrKind {
        StrKind {
            unicode: string_char_size(opcode) == Some(4),
        }
    }

    /// The op that stores one character.
    fn setitem(self) -> Opcode {
        if self.unicode {
            Opcode::Unicodesetitem
        } else {
            Opcode::Strsetitem
        }
    }

    /// The largest character.
    fn mask(self) -> i64 {
        if self.unicode {
            0xffff_ffff
        } else {
            0xff
        }
    }
}

/// The op that stores a character into a string allocated by `alloc` (`newstr` or
/// `newunicode`).
pub(super) fn string_setitem(alloc: Opcode) -> Opcode {
    StrKind::of(alloc).setitem()
}

impl<'a> Pass<'a> {
    /// A string op (see the module documentation); `None` for an op without a result.
    pub(super) fn string_op(&mut self, op: &Op, args: &[Value]) -> Option<Value> {
        use Opcode::*;
        let kind = StrKind::of(op.opcode);
        match op.opcode {
            Newstr | Newunicode => Some(self.new_string(op, args)),
            Strlen | Unicodelen => match self.virtual_string(args[0], kind) {
                Some((_, len)) => {
                    self.removed(Reason::VirtualAccess);
                    Some(self.make_int(i64::from(len)))
                }
                None => Some(self.string_length(op, args)),
            },
            Strgetitem | Unicodegetitem => match self.virtual_char(args[0], args[1], kind) {
                Some((id, k)) => {
                    self.removed(Reason::VirtualAccess);
                    let found = self.virtuals[id as usize].get(VirtualField::Item(k));
                    Some(match found {
                        Some(c) => {
                            let c = self.find(c);
                            self.narrow_char(c, kind)
                        }
                        None => self.make_int(0),
                    })
                }
                None => self.generic(op, args),
            },
            Strsetitem | Unicodesetitem => {
                match self.virtual_char(args[0], args[1], kind) {
                    Some((id, k)) => {
                        self.removed(Reason::VirtualAccess);
                        let c = self.find(args[2]);
                        self.virtuals[id as usize].set(VirtualField::Item(k), c);
                    }
                    None => {
                        self.generic(op, args);
                    }
                }
                None
            }
            Copystrcontent | Copyunicodecontent => {
                if !self.virtual_string_copy(args, kind) {
                    self.generic(op, args);
                }
                None
            }
            _ => self.generic(op, args),
        }
    }

    /// `newstr(n)`/`newunicode(n)`: virtual for a constant `n` up to the virtual array limit.
    fn new_string(&mut self, op: &Op, args: &[Value]) -> Value {
        let len = self.const_i64(args[0]).filter(|n| (0..=MAX_VIRTUAL_ARRAY).contains(n));
        match len {
            Some(n) => {
                let r = self.push_arena(Op {
                    opcode: op.opcode,
                    descr: None,
                    guard: None,
                    args: SmallVec::from_slice(args),
                });
                self.v.info[r.index()].virt = self.virtuals.len() as u32;
                self.virtuals.push(super::virtuals::Virtual {
                    kind: VirtualKind::Str {
                        opcode: op.opcode,
                        len: n as u32,
                    },
                    fields: Vec::new(),
                });
                Value::op(r)
            }
            None => {
                let v = self.generic(op, args).expect("an allocation has a result");
                self.after_alloc_emitted(v);
                v
            }
        }
    }

    /// `strlen`/`unicodelen` of a string that is not virtual: a string's length never
    /// changes, so the length of an allocation or an earlier read is reused.
    fn string_length(&mut self, op: &Op, args: &[Value]) -> Value {
        let key = Key::new(op.opcode, args, None);
        if self.opts.cse {
            if let Some(v) = self.cse_get(&key) {
                self.removed(Reason::Cse);
                return self.find(v);
            }
        }
        let v = self.generic(op, args).expect("a length is a value");
        if self.opts.cse {
            self.cse.pure.insert(key, v);
        }
        v
    }

    /// The virtual string `s` is (its id and length), if it is one of `kind`.
    fn virtual_string(&self, s: Value, kind: StrKind) -> Option<(u32, u32)> {
        let id = self.virt_of(s)?;
        match self.virtuals[id as usize].kind {
            VirtualKind::Str { opcode, len } if StrKind::of(opcode) == kind => Some((id, len)),
            _ => None,
        }
    }

    /// The virtual string `s` of `kind` and the constant index `idx` within it, if both.
    fn virtual_char(&self, s: Value, idx: Value, kind: StrKind) -> Option<(u32, u32)> {
        let (id, len) = self.virtual_string(s, kind)?;
        let k = self.const_i64(idx)?;
        (0..i64::from(len)).contains(&k).then_some((id, k as u32))
    }

    /// What a string of `kind` holds after a store of `c`: its low byte (or 4 bytes), as a
    /// value of its own only when `c` may not fit.
    fn narrow_char(&mut self, c: Value, kind: StrKind) -> Value {
        let mask = kind.mask();
        if let Some(k) = self.const_i64(c) {
            return self.make_int(k & mask);
        }
        let b = self.bound_of(c);
        if !b.is_empty() && b.lower_i64() >= 0 && b.upper_i64() <= mask {
            return c;
        }
        let m = self.make_int(mask);
        self.pure(Opcode::IntAnd, &[c, m], None, true)
    }

    /// `copystrcontent(src, dst, src_start, dst_start, length)` (`args`) between two virtual
    /// strings of `kind` at constant positions within both: the characters move (all read,
    /// then all written) and the op goes; whether it did.
    fn virtual_string_copy(&mut self, args: &[Value], kind: StrKind) -> bool {
        let (Some((s, slen)), Some((d, dlen))) =
            (self.virtual_string(args[0], kind), self.virtual_string(args[1], kind))
        else {
            return false;
        };
        let [Some(ss), Some(ds), Some(n)] = [args[2], args[3], args[4]].map(|a| self.const_i64(a)) else {
            return false;
        };
        let within =
            |start: i64, len: u32| start >= 0 && n >= 0 && start.checked_add(n).is_some_and(|e| e <= i64::from(len));
        if !within(ss, slen) || !within(ds, dlen) {
            return false;
        }
        self.removed(Reason::VirtualAccess);
        self.move_virtual_items(s, ss as u32, d, ds as u32, n as u32, None);
        true
    }
}
