//! The in-memory ELF object GDB reads for a piece of compiled code: a `.text` section at the
//! code's run-time address (no bytes: GDB reads the code from the process), the code's
//! symbol, DWARF (a compile unit with a subprogram, a line table mapping each op's code to
//! its line of the trace text) and call frame information (`.debug_frame`).
//!
//! The object is relocatable (`ET_REL`, as LLVM's JIT registers them) with its section
//! addresses set to where the code runs: GDB places each section at its `sh_addr`, and every
//! DWARF address is absolute, so nothing needs relocating.

use super::{line_ranges, Piece, SourceText};
use crate::codegen::Unwind;
use gimli::write::{
    Address, AttributeValue, CallFrameInstruction, CommonInformationEntry, DwarfUnit, EndianVec, FrameDescriptionEntry,
    FrameTable, LineProgram, LineString, Sections,
};
use gimli::{constants, Encoding, Format, LineEncoding, LittleEndian, Register, X86_64};
use object::elf;
use object::write::elf::{FileHeader, SectionHeader, Sym, Writer};
use object::Endianness;
use std::path::Path;

/// The DWARF sections of `piece` (named `symbol`, its text at `path`), non-empty ones only.
fn dwarf_sections(
    piece: &Piece<'_>,
    symbol: &str,
    path: &Path,
    source: &SourceText,
) -> gimli::write::Result<Vec<(&'static str, Vec<u8>)>> {
    let addr = piece.code.as_ptr() as u64;
    let len = piece.code.len() as u64;
    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let dir = path
        .parent()
        .unwrap_or(Path::new("/"))
        .as_os_str()
        .as_encoded_bytes()
        .to_vec();
    let file = path.file_name().unwrap_or_default().as_encoded_bytes().to_vec();
    let mut dwarf = DwarfUnit::new(encoding);
    let mut program = LineProgram::new(
        encoding,
        LineEncoding::default(),
        LineString::String(dir.clone()),
        None,
        LineString::String(file.clone()),
        None,
    );
    let file_id = program.add_file(LineString::String(file), program.default_directory(), None);
    program.begin_sequence(Some(Address::Constant(addr)));
    for (start, _, line) in line_ranges(piece, source) {
        let row = program.row();
        row.address_offset = u64::from(start);
        row.file = file_id;
        row.line = u64::from(line);
        row.is_statement = true;
        program.generate_row();
    }
    program.end_sequence(len);
    dwarf.unit.line_program = program;

    let path = path.as_os_str().as_encoded_bytes().to_vec();
    let root = dwarf.unit.root();
    let cu = dwarf.unit.get_mut(root);
    cu.set(constants::DW_AT_producer, AttributeValue::String(b"tracejit".to_vec()));
    cu.set(
        constants::DW_AT_language,
        AttributeValue::Language(constants::DW_LANG_Mips_Assembler),
    );
    cu.set(constants::DW_AT_name, AttributeValue::String(path));
    cu.set(constants::DW_AT_comp_dir, AttributeValue::String(dir));
    cu.set(
        constants::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(addr)),
    );
    cu.set(constants::DW_AT_high_pc, AttributeValue::Udata(len));
    let sub = dwarf.unit.add(root, constants::DW_TAG_subprogram);
    let sub = dwarf.unit.get_mut(sub);
    sub.set(
        constants::DW_AT_name,
        AttributeValue::String(symbol.as_bytes().to_vec()),
    );
    sub.set(constants::DW_AT_external, AttributeValue::Flag(true));
    sub.set(
        constants::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(addr)),
    );
    sub.set(constants::DW_AT_high_pc, AttributeValue::Udata(len));

    let mut sections = Sections::new(EndianVec::new(LittleEndian));
    dwarf.write(&mut sections)?;
    frame_table(piece).write_debug_frame(&mut sections.debug_frame)?;
    let mut out = Vec::new();
    sections.for_each(|id, data| {
        if !data.slice().is_empty() {
            out.push((id.name(), data.slice().to_vec()));
        }
        Ok::<(), gimli::write::Error>(())
    })?;
    Ok(out)
}

/// The call frame information of `piece`: a function entered by `call` (CFA `rsp + 8`,
/// the return address just below it), then the steps the code generator recorded.
fn frame_table(piece: &Piece<'_>) -> FrameTable {
    // `.debug_frame` version 1 (DWARF 2), the one every consumer reads.
    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 1,
        address_size: 8,
    };
    let mut cie = CommonInformationEntry::new(encoding, 1, -8, X86_64::RA);
    cie.add_instruction(CallFrameInstruction::Cfa(X86_64::RSP, 8));
    cie.add_instruction(CallFrameInstruction::Offset(X86_64::RA, -8));
    let mut table = FrameTable::default();
    let cie = table.add_cie(cie);
    let addr = piece.code.as_ptr() as u64;
    let mut fde = FrameDescriptionEntry::new(Address::Constant(addr), piece.code.len() as u32);
    for &(at, step) in piece.unwind {
        let ins = match step {
            Unwind::Cfa(n) => CallFrameInstruction::CfaOffset(n as i32),
            Unwind::Saved(reg, n) => CallFrameInstruction::Offset(Register(reg), -(n as i32)),
        };
        fde.add_instruction(at, ins);
    }
    table.add_fde(cie, fde);
    table
}

/// The ELF object for `piece`.
pub(crate) fn object(piece: &Piece<'_>, symbol: &str, path: &Path, source: &SourceText) -> Result<Vec<u8>, String> {
    let debug = dwarf_sections(piece, symbol, path, source).map_err(|e| format!("DWARF: {e}"))?;
    let addr = piece.code.as_ptr() as u64;
    let len = piece.code.len() as u64;
    let mut buf = Vec::new();
    let mut w = Writer::new(Endianness::Little, true, &mut buf);

    // Reserve: header, section indices and names, the symbol, then every file range.
    w.reserve_file_header();
    let text_name = w.add_section_name(b".text");
    let text_index = w.reserve_section_index();
    let debug_names: Vec<_> = debug
        .iter()
        .map(|(name, _)| (w.add_section_name(name.as_bytes()), w.reserve_section_index()))
        .collect();
    let sym_name = w.add_string(symbol.as_bytes());
    w.reserve_null_symbol_index();
    w.reserve_symbol_index(Some(text_index));
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();
    w.reserve_shstrtab_section_index();
    let offsets: Vec<u64> = debug.iter().map(|(_, data)| w.reserve(data.len() as u64, 1)).collect();
    w.reserve_symtab();
    w.reserve_strtab().map_err(|e| e.to_string())?;
    w.reserve_shstrtab().map_err(|e| e.to_string())?;
    w.reserve_section_headers();

    // Write in the same order.
    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_REL,
        e_machine: elf::EM_X86_64,
        e_entry: 0,
        e_flags: Default::default(),
    })
    .map_err(|e| e.to_string())?;
    for (_, data) in &debug {
        w.write(data);
    }
    w.write_null_symbol();
    w.write_symbol(&Sym {
        section: Some(text_index.0),
        st_name: w.string_offset(Some(sym_name)),
        st_info: elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_FUNC),
        st_other: Default::default(),
        st_shndx: Default::default(),
        st_value: 0,
        st_size: len,
    });
    w.write_strtab();
    w.write_shstrtab();
    w.write_null_section_header();
    w.write_section_header(&SectionHeader {
        sh_name: w.section_name_offset(Some(text_name)),
        sh_type: elf::SHT_NOBITS,
        sh_flags: elf::SHF_ALLOC | elf::SHF_EXECINSTR,
        sh_addr: addr,
        sh_offset: 0,
        sh_size: len,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 16,
        sh_entsize: 0,
    });
    for ((name, _), ((_, data), offset)) in debug_names.iter().zip(debug.iter().zip(&offsets)) {
        w.write_section_header(&SectionHeader {
            sh_name: w.section_name_offset(Some(*name)),
            sh_type: elf::SHT_PROGBITS,
            sh_flags: Default::default(),
            sh_addr: 0,
            sh_offset: *offset,
            sh_size: data.len() as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: 1,
            sh_entsize: 0,
        });
    }
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    Ok(buf)
}
