//! Descriptors in text form: PyPy's spellings (`<FieldS name 8 pure>`, `<SizeDescr 16>`,
//! `<ArrayP 8>`, `<InteriorFieldDescr <FieldP k 0>>`, `<Calli 8 ii EF=0 OS=12>`,
//! `TargetToken(n)`, `<LoopN>`) plus our optional extension words for layout facts PyPy
//! does not print (`size=N`, `signed`, `vtable=N`, `base=N`, `len=N`, `item=N`).

use crate::descr::{
    ArrayDescr, CallDescr, CallEffect, Descr, FieldDescr, InteriorDescr, SizeDescr, DEFAULT_ARRAY_BASE,
    DEFAULT_ARRAY_LEN,
};
use crate::opcode::Kind;
use std::fmt::Write;

/// Default [`FieldDescr::size`] when the text gives none.
pub const DEFAULT_FIELD_SIZE: u8 = 8;
/// Default [`InteriorDescr::item_size`] when the text gives none.
pub const DEFAULT_INTERIOR_ITEM: i64 = 16;

fn kind_letter(kind: Kind, signed: bool) -> char {
    match kind {
        Kind::Int if signed => 'S',
        Kind::Int => 'U',
        Kind::Ref => 'P',
        Kind::Float => 'F',
        Kind::Void => 'V',
    }
}

fn arg_letter(kind: Kind) -> char {
    match kind {
        Kind::Int => 'i',
        Kind::Ref => 'r',
        Kind::Float => 'f',
        Kind::Void => 'v',
    }
}

fn write_field(out: &mut String, f: &FieldDescr) {
    let _ = write!(out, "<Field{} {} {}", kind_letter(f.kind, f.signed), f.name, f.offset);
    if f.immutable {
        out.push_str(" pure");
    }
    if f.size != DEFAULT_FIELD_SIZE {
        let _ = write!(out, " size={}", f.size);
    }
    if f.kind != Kind::Int && f.signed {
        out.push_str(" signed");
    }
    out.push('>');
}

/// The text of a descriptor, as it follows `descr=`.
pub fn descr_to_string(d: &Descr) -> String {
    let mut out = String::new();
    match d {
        Descr::Field(f) => write_field(&mut out, f),
        Descr::Size(s) => {
            let _ = write!(out, "<SizeDescr {}", s.size);
            if let Some(v) = s.vtable {
                let _ = write!(out, " vtable={v}");
            }
            out.push('>');
        }
        Descr::Array(a) => {
            let _ = write!(out, "<Array{} {}", kind_letter(a.kind, a.signed), a.item_size);
            if a.base_offset != DEFAULT_ARRAY_BASE {
                let _ = write!(out, " base={}", a.base_offset);
            }
            if a.len_offset != DEFAULT_ARRAY_LEN {
                let _ = write!(out, " len={}", a.len_offset);
            }
            if a.kind != Kind::Int && a.signed {
                out.push_str(" signed");
            }
            out.push('>');
        }
        Descr::Interior(i) => {
            out.push_str("<InteriorFieldDescr ");
            write_field(&mut out, &i.field);
            if i.item_size != DEFAULT_INTERIOR_ITEM {
                let _ = write!(out, " item={}", i.item_size);
            }
            out.push('>');
        }
        Descr::Call(c) => {
            let _ = write!(out, "<Call{} {}", arg_letter(c.result), c.result_size);
            if !c.args.is_empty() {
                out.push(' ');
                out.extend(c.args.iter().map(|&k| arg_letter(k)));
            }
            let _ = write!(out, " EF={}", c.effect.number());
            if let Some(os) = c.oopspec {
                let _ = write!(out, " OS={os}");
            }
            out.push('>');
        }
        Descr::Target(t) => {
            let _ = write!(out, "TargetToken({t})");
        }
        Descr::Loop(n) => {
            let _ = write!(out, "<Loop{n}>");
        }
        Descr::Other(s) => {
            let _ = write!(out, "<{s}>");
        }
    }
    out
}

/// Split `s` into whitespace-separated words, keeping a nested `<...>` word whole.
fn words(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut start = None;
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => {
                if start.is_none() {
                    start = Some(i);
                }
                depth += 1;
            }
            '>' => {
                if depth == 0 {
                    return Err("unbalanced `>`".into());
                }
                depth -= 1;
            }
            c if c.is_whitespace() && depth == 0 => {
                if let Some(st) = start.take() {
                    out.push(&s[st..i]);
                }
            }
            _ => {
                if start.is_none() {
                    start = Some(i);
                }
            }
        }
    }
    if depth != 0 {
        return Err("unbalanced `<`".into());
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    Ok(out)
}

fn int_word<T: std::str::FromStr>(w: Option<&&str>, what: &str) -> Result<T, String> {
    let w = w.ok_or_else(|| format!("missing {what}"))?;
    parse_int::<T>(w).ok_or_else(|| format!("bad {what} `{w}`"))
}

fn parse_int<T: std::str::FromStr>(w: &str) -> Option<T> {
    w.parse::<T>().ok()
}

fn ext_value<T: std::str::FromStr>(word: &str, key: &str) -> Option<Result<T, String>> {
    let v = word.strip_prefix(key)?.strip_prefix('=')?;
    Some(parse_int::<T>(v).ok_or_else(|| format!("bad value in `{word}`")))
}

fn parse_field(kind_char: char, rest: &[&str]) -> Result<FieldDescr, String> {
    let (kind, signed) = match kind_char {
        'S' => (Kind::Int, true),
        'U' => (Kind::Int, false),
        'P' => (Kind::Ref, false),
        'F' => (Kind::Float, false),
        _ => return Err(format!("unknown field kind `Field{kind_char}`")),
    };
    let name = rest.first().ok_or("field descriptor without a name")?;
    if name.contains(['<', '>']) {
        return Err(format!("bad field name `{name}`"));
    }
    let offset: i64 = int_word(rest.get(1), "field offset")?;
    let mut f = FieldDescr {
        name: (*name).into(),
        offset,
        size: DEFAULT_FIELD_SIZE,
        signed,
        kind,
        immutable: false,
    };
    for w in &rest[2..] {
        if *w == "pure" {
            f.immutable = true;
        } else if *w == "signed" && kind != Kind::Int {
            f.signed = true;
        } else if let Some(v) = ext_value::<u8>(w, "size") {
            f.size = v?;
            if !matches!(f.size, 1 | 2 | 4 | 8) {
                return Err(format!("field size must be 1, 2, 4 or 8, got {}", f.size));
            }
        } else {
            return Err(format!("unexpected `{w}` in a field descriptor"));
        }
    }
    Ok(f)
}

fn parse_field_text(text: &str) -> Result<FieldDescr, String> {
    let ws = words(text)?;
    match ws.first() {
        Some(w) if w.len() == 6 && w.starts_with("Field") => parse_field(w.as_bytes()[5] as char, &ws[1..]),
        _ => Err(format!("expected a field descriptor, found `<{text}>`")),
    }
}

/// Parse the inside of a `<...>` descriptor (not a guard's). Known forms that are malformed
/// are errors; unknown forms become [`Descr::Other`].
pub fn parse_angle_descr(text: &str) -> Result<Descr, String> {
    let ws = words(text)?;
    let Some(&head) = ws.first() else {
        return Err("empty descriptor `<>`".into());
    };
    let rest = &ws[1..];
    if head.len() == 6 && head.starts_with("Field") && "SUPF".contains(&head[5..]) {
        return parse_field(head.as_bytes()[5] as char, rest).map(Descr::Field);
    }
    if head == "SizeDescr" {
        let size: i64 = int_word(rest.first(), "object size")?;
        let mut s = SizeDescr { size, vtable: None };
        for w in rest.iter().skip(1) {
            match ext_value::<i64>(w, "vtable") {
                Some(v) => s.vtable = Some(v?),
                None => return Err(format!("unexpected `{w}` in a size descriptor")),
            }
        }
        return Ok(Descr::Size(s));
    }
    if head.len() == 6 && head.starts_with("Array") && "SUPF".contains(&head[5..]) {
        let (kind, signed) = match &head[5..] {
            "S" => (Kind::Int, true),
            "U" => (Kind::Int, false),
            "P" => (Kind::Ref, false),
            _ => (Kind::Float, false),
        };
        let item_size: u8 = int_word(rest.first(), "item size")?;
        let mut a = ArrayDescr {
            item_size,
            signed,
            kind,
            base_offset: DEFAULT_ARRAY_BASE,
            len_offset: DEFAULT_ARRAY_LEN,
        };
        for w in rest.iter().skip(1) {
            if *w == "signed" && kind != Kind::Int {
                a.signed = true;
            } else if let Some(v) = ext_value::<i64>(w, "base") {
                a.base_offset = v?;
            } else if let Some(v) = ext_value::<i64>(w, "len") {
                a.len_offset = v?;
            } else {
                return Err(format!("unexpected `{w}` in an array descriptor"));
            }
        }
        return Ok(Descr::Array(a));
    }
    if head == "InteriorFieldDescr" {
        let inner = rest.first().ok_or("interior field descriptor without its field")?;
        let inner = inner
            .strip_prefix('<')
            .and_then(|s| s.strip_suffix('>'))
            .ok_or_else(|| format!("expected `<Field...>` in an interior field descriptor, found `{inner}`"))?;
        let field = parse_field_text(inner)?;
        let mut d = InteriorDescr {
            item_size: DEFAULT_INTERIOR_ITEM,
            field,
        };
        for w in rest.iter().skip(1) {
            match ext_value::<i64>(w, "item") {
                Some(v) => d.item_size = v?,
                None => return Err(format!("unexpected `{w}` in an interior field descriptor")),
            }
        }
        return Ok(Descr::Interior(d));
    }
    if head.len() == 5 && head.starts_with("Call") && "irfv".contains(&head[4..]) {
        let result = match &head[4..] {
            "i" => Kind::Int,
            "r" => Kind::Ref,
            "f" => Kind::Float,
            _ => Kind::Void,
        };
        let result_size: u8 = int_word(rest.first(), "result size")?;
        let mut i = 1;
        let mut args = Vec::new();
        if let Some(w) = rest.get(i) {
            if !w.contains('=') {
                for c in w.chars() {
                    args.push(match c {
                        'i' => Kind::Int,
                        'r' => Kind::Ref,
                        'f' => Kind::Float,
                        _ => {
                            return Err(format!(
                                "bad argument kind `{c}` in a call descriptor (expected i, r or f)"
                            ))
                        }
                    });
                }
                i += 1;
            }
        }
        let mut effect = None;
        let mut oopspec = None;
        for w in &rest[i..] {
            if let Some(v) = ext_value::<u8>(w, "EF") {
                let n = v?;
                effect = Some(CallEffect::from_number(n).ok_or_else(|| format!("unknown call effect EF={n}"))?);
            } else if let Some(v) = ext_value::<u32>(w, "OS") {
                oopspec = Some(v?);
            } else {
                return Err(format!("unexpected `{w}` in a call descriptor"));
            }
        }
        let effect = effect.ok_or("call descriptor without `EF=`")?;
        return Ok(Descr::Call(CallDescr {
            result,
            result_size,
            args,
            effect,
            oopspec,
        }));
    }
    if ws.len() == 1 {
        if let Some(n) = head.strip_prefix("Loop").and_then(|n| n.parse::<i64>().ok()) {
            return Ok(Descr::Loop(n));
        }
    }
    Ok(Descr::Other(text.to_string()))
}

/// A guard descriptor: `GuardN` (decimal id), `Guard0x...` (PyPy's guard address), with an
/// optional ` key=K` word.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum GuardSpec {
    /// An explicit id and optional resume key.
    Id(u32, Option<u64>),
    /// PyPy's address: a fresh id, the address as resume key.
    Address(u64),
}

/// Parse the inside of `<Guard...>`.
pub(crate) fn parse_guard_descr(text: &str) -> Result<GuardSpec, String> {
    let ws = words(text)?;
    let head = ws.first().copied().unwrap_or("");
    let Some(num) = head.strip_prefix("Guard") else {
        return Err(format!(
            "a guard's descriptor must be `<GuardN>` or `<Guard0x...>`, found `<{text}>`"
        ));
    };
    let mut key = None;
    for w in &ws[1..] {
        let Some(v) = w.strip_prefix("key=") else {
            return Err(format!("unexpected `{w}` in a guard descriptor"));
        };
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse::<u64>().ok(),
        };
        key = Some(parsed.ok_or_else(|| format!("bad resume key `{v}`"))?);
    }
    if let Some(hex) = num.strip_prefix("0x") {
        if key.is_some() {
            return Err("`key=` is not allowed with a guard address".into());
        }
        return u64::from_str_radix(hex, 16)
            .map(GuardSpec::Address)
            .map_err(|_| format!("bad guard address `{num}`"));
    }
    num.parse::<u32>()
        .ok()
        .map(|n| GuardSpec::Id(n, key))
        .ok_or_else(|| format!("bad guard id `{num}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pypy_forms_round_trip() {
        for s in [
            "<FieldS pypy.objspace.std.intobject.W_IntObject.inst_intval 8 pure>",
            "<FieldU x 81>",
            "<FieldP list.items 16>",
            "<FieldF f 8 pure size=4>",
            "<SizeDescr 16>",
            "<SizeDescr 16 vtable=7>",
            "<ArrayP 8>",
            "<ArrayU 1 base=24 len=16>",
            "<InteriorFieldDescr <FieldP odictentry.key 0>>",
            "<InteriorFieldDescr <FieldS odictentry.hash 8> item=24>",
            "<Calli 8 ii EF=0 OS=12>",
            "<Callv 0 rii EF=5>",
            "<Callr 8 EF=7>",
            "<Loop-1>",
            "<Loop38>",
            "<QuasiImmutDescr object at 0x7f316ac9f6a0>",
        ] {
            let inner = &s[1..s.len() - 1];
            let d = parse_angle_descr(inner).unwrap();
            assert_eq!(descr_to_string(&d), s);
        }
    }

    #[test]
    fn malformed_known_forms_are_errors() {
        for s in [
            "FieldS x",
            "FieldS x y",
            "FieldS x 8 bogus",
            "SizeDescr",
            "ArrayS 999",
            "Calli 8 iz EF=0",
            "Calli 8 ii",
            "Calli 8 ii EF=9",
            "InteriorFieldDescr x",
            "",
        ] {
            assert!(parse_angle_descr(s).is_err(), "{s}");
        }
        assert_eq!(parse_angle_descr("FieldQ x 8"), Ok(Descr::Other("FieldQ x 8".into())));
    }

    #[test]
    fn guard_descrs() {
        assert_eq!(parse_guard_descr("Guard3"), Ok(GuardSpec::Id(3, None)));
        assert_eq!(parse_guard_descr("Guard3 key=9"), Ok(GuardSpec::Id(3, Some(9))));
        assert_eq!(
            parse_guard_descr("Guard3 key=0x7f31"),
            Ok(GuardSpec::Id(3, Some(0x7f31)))
        );
        assert!(parse_guard_descr("Guard3 key=x").is_err());
        assert_eq!(parse_guard_descr("Guard0x7f31"), Ok(GuardSpec::Address(0x7f31)));
        assert!(parse_guard_descr("Loop3").is_err());
        assert!(parse_guard_descr("Guardx").is_err());
    }
}
