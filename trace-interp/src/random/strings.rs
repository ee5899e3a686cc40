//! Random string ops: byte and unicode strings the trace allocates, their characters (values
//! that may not fit a character included), lengths, hashes and copies between them.

use super::*;

impl<'c> Gen<'c> {
    pub(super) fn string_op(&mut self) -> bool {
        use Opcode::*;
        match self.rng.below(8) {
            0 | 1 => {
                let opc = *self.rng.pick(&[Newstr, Newunicode]);
                let n = if self.rng.chance(1, 6) {
                    // A length known only at run time (the string cannot stay virtual).
                    let x = self.int_arg();
                    let m = self.konst(Const::Int(3));
                    match self.op(IntAnd, &[x, m], None) {
                        Some(n) => n,
                        None => return false,
                    }
                } else {
                    let len = *self.rng.pick(&[0i64, 1, 2, 3, 4, 8]);
                    self.konst(Const::Int(len))
                };
                self.op(opc, &[n], None).is_some()
            }
            2 | 3 => {
                let Some((s, len, unicode)) = self.string_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let c = if self.rng.chance(2, 3) {
                    let c = self.rng.below(if unicode { 0x11_0000 } else { 256 }) as i64;
                    self.konst(Const::Int(c))
                } else {
                    self.int_arg()
                };
                let opc = if unicode { Unicodesetitem } else { Strsetitem };
                self.op(opc, &[s, i, c], None).is_some()
            }
            4 => {
                let Some((s, len, unicode)) = self.string_ref() else {
                    return false;
                };
                let Some(i) = self.index_for(len) else { return false };
                let opc = if unicode { Unicodegetitem } else { Strgetitem };
                self.op(opc, &[s, i], None).is_some()
            }
            5 => {
                let Some((s, _, unicode)) = self.string_ref() else {
                    return false;
                };
                let opc = match (unicode, self.rng.chance(1, 4)) {
                    (false, false) => Strlen,
                    (true, false) => Unicodelen,
                    (false, true) => Strhash,
                    (true, true) => Unicodehash,
                };
                self.op(opc, &[s], None).is_some()
            }
            _ => {
                let Some((src, slen, unicode)) = self.string_ref() else {
                    return false;
                };
                let Some((dst, dlen, u2)) = self.string_ref() else {
                    return false;
                };
                if u2 != unicode {
                    return false;
                }
                let n = self.rng.below(slen.min(dlen) + 1);
                let ss = self.rng.below(slen - n + 1) as i64;
                let ds = self.rng.below(dlen - n + 1) as i64;
                let [ss, ds, n] = [ss, ds, n as i64].map(|c| self.konst(Const::Int(c)));
                let opc = if unicode { Copyunicodecontent } else { Copystrcontent };
                self.op(opc, &[src, dst, ss, ds, n], None).is_some()
            }
        }
    }

    /// A string the trace allocated: its value, length and whether it is a unicode string.
    fn string_ref(&mut self) -> Option<(Value, u64, bool)> {
        let v = self.pick_live(Kind::Ref, |g, l| {
            let a = g.ex(l.v).bits();
            g.st.heap
                .objects
                .get(&a)
                .is_some_and(|o| matches!(o.kind, ObjKind::Str { .. } | ObjKind::Unicode { .. }))
        })?;
        let o = self.st.heap.objects.get(&self.ex(v).bits())?;
        let unicode = matches!(o.kind, ObjKind::Unicode { .. });
        Some((v, o.length()?, unicode))
    }
}
