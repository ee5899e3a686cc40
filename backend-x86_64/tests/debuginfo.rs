//! Debugger and profiler integration: GDB (run for real on this test binary) shows the
//! compiled trace's symbol, its text and line, and unwinds through it to the Rust caller;
//! the perf jitdump file has a record per trace and bridge; the perf map lists live code
//! without overlapping entries.

use backend_x86_64::{compile, CompileOptions, CompiledTrace, Exit, ExitValue, SimpleHeap};
use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};
use trace_ir::{CallDescr, CallEffect, Descr, GuardId, Kind, Opcode, Trace, TraceBuilder};

fn opts() -> CompileOptions {
    CompileOptions {
        log_asm: false,
        perf_map: false,
        ..CompileOptions::default()
    }
}

thread_local! {
    /// Calls of the two functions below on this thread (compiled code calls them on the
    /// thread that runs it).
    static CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The Rust function the compiled code calls (GDB breaks in it by this name).
#[no_mangle]
pub extern "sysv64" fn tracejit_callback_target(x: i64) -> i64 {
    CALLS.set(CALLS.get() + 1);
    x * 2
}

/// The Rust function the bridge calls, with two arguments on the stack (GDB unwinds
/// through the bridge while they are pushed).
#[no_mangle]
pub extern "sysv64" fn tracejit_callback_many(x: i64, a: i64, b: i64, c: i64, d: i64, e: i64, f: i64, g: i64) -> i64 {
    CALLS.set(CALLS.get() + 1);
    x * 2 + a + b + c + d + e + f + g
}

fn call_descr(b: &mut TraceBuilder, args: usize) -> trace_ir::DescrRef {
    b.descr(Descr::Call(CallDescr {
        result: Kind::Int,
        result_size: 8,
        args: vec![Kind::Int; args],
        effect: CallEffect::CanRaise,
        oopspec: None,
    }))
}

/// A loop `for i in 0..n { f(i) }` whose exit guard (Guard0) leaves with `[i, f, g]`, and
/// a bridge for that guard that finishes with `g(i + 1000, 1, 2, .., 7)`.
fn loop_and_bridge(name: &str) -> (Trace, Trace) {
    let mut b = TraceBuilder::new();
    let (i, n, f, g) = (
        b.input(Kind::Int),
        b.input(Kind::Int),
        b.input(Kind::Int),
        b.input(Kind::Int),
    );
    let p = b.label(&[i, n, f, g]);
    let lt = b.op(Opcode::IntLt, &[p[0], p[1]]);
    let gd = b.guard(Opcode::GuardTrue, &[lt], &[p[0], p[2], p[3]], 0);
    assert_eq!(gd, GuardId(0));
    let cd = call_descr(&mut b, 1);
    b.op_with_descr(Opcode::CallI, &[p[2], p[0]], cd);
    let one = b.const_int(1);
    let i2 = b.op(Opcode::IntAdd, &[p[0], one]);
    b.jump(&[i2, p[1], p[2], p[3]]);
    let mut root = b.build().unwrap();
    root.info.name = format!("{name} loop");

    let mut b = TraceBuilder::new();
    let (i, _f, g) = (b.input(Kind::Int), b.input(Kind::Int), b.input(Kind::Int));
    let k = b.const_int(1000);
    let x = b.op(Opcode::IntAdd, &[i, k]);
    let mut args = vec![g, x];
    args.extend((1..=7).map(|v| b.const_int(v)));
    let cd = call_descr(&mut b, 8);
    let r = b.op_with_descr(Opcode::CallI, &args, cd);
    b.finish(&[r]);
    let mut bridge = b.build().unwrap();
    bridge.info.name = format!("{name} bridge");
    (root, bridge)
}

fn compile_tree(name: &str, o: &CompileOptions) -> CompiledTrace {
    let (root, bridge) = loop_and_bridge(name);
    let mut c = compile(&root, o).unwrap();
    c.attach_bridge(GuardId(0), &bridge, o).unwrap();
    c
}

/// Code registered with GDB runs as usual: the loop calls a Rust function three times,
/// its bridge calls another once and finishes with its result. (GDB runs this test in
/// `gdb_shows_the_trace_symbol_line_and_caller_in_a_backtrace`.)
#[test]
fn gdb_registered_code_runs_and_calls_back() {
    let o = CompileOptions {
        gdb_jit: true,
        ..opts()
    };
    let c = compile_tree("gdb", &o);
    let before = CALLS.get();
    let f = tracejit_callback_target as *const () as u64;
    let g = tracejit_callback_many as *const () as u64;
    // SAFETY: `f` and `g` are the test's `extern "sysv64"` callbacks, of the signatures the
    // call descriptors give; the trace touches no memory.
    match unsafe { c.run(&[0, 3, f, g], &mut SimpleHeap::new()) }.unwrap() {
        Exit::Finish { values } => assert_eq!(values, vec![ExitValue::Int(2 * 1003 + 28)]),
        other => panic!("{other:?}"),
    }
    assert_eq!(CALLS.get() - before, 4);
}

/// With `gdb_jit`, the text of the loop and of its bridge is written to
/// `$TMPDIR/tracejit-<pid>/<symbol>.trace` (each trace's printed text between comment
/// lines) and removed when the compiled tree is dropped.
#[test]
fn gdb_trace_text_files_live_as_long_as_the_code() {
    let dir = std::env::temp_dir().join(format!("tracejit-{}", std::process::id()));
    let files = |prefix: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
                    .collect()
            })
            .unwrap_or_default()
    };
    let o = CompileOptions {
        gdb_jit: true,
        ..opts()
    };
    let (root, _) = loop_and_bridge("textfile");
    let c = compile_tree("textfile", &o);
    let loops = files("tracejit_textfile_loop_");
    let bridges = files("tracejit_textfile_bridge_");
    assert_eq!((loops.len(), bridges.len()), (1, 1), "{loops:?} {bridges:?}");
    assert!(bridges[0].to_string_lossy().ends_with("_bridge_0.trace"));
    let text = std::fs::read_to_string(&loops[0]).unwrap();
    let inner: Vec<&str> = text.lines().collect();
    assert!(inner[0].starts_with("# tracejit_textfile_loop_"));
    assert_eq!(inner[inner.len() - 1], "# exit stubs and epilogue");
    let printed = trace_ir::print_trace(&root);
    assert_eq!(inner[1..inner.len() - 1].join("\n") + "\n", printed);
    drop(c);
    assert!(files("tracejit_textfile_").is_empty(), "removed with the code");
}

/// Trees compiled, run and dropped on several threads at once with `gdb_jit` all run
/// correctly and leave no trace text behind (registration and removal are serialized).
#[test]
fn gdb_registration_from_several_threads() {
    let o = CompileOptions {
        gdb_jit: true,
        ..opts()
    };
    let f = tracejit_callback_target as *const () as u64;
    let g = tracejit_callback_many as *const () as u64;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    let c = compile_tree("threads", &o);
                    // SAFETY: as above.
                    match unsafe { c.run(&[0, 1, f, g], &mut SimpleHeap::new()) }.unwrap() {
                        Exit::Finish { values } => assert_eq!(values, vec![ExitValue::Int(2 * 1001 + 28)]),
                        other => panic!("{other:?}"),
                    }
                }
            });
        }
    });
    let dir = std::env::temp_dir().join(format!("tracejit-{}", std::process::id()));
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("tracejit_threads_"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Whether a test needing `tool` runs: yes when it is installed; when it is missing, a
/// failure under `TRACEJIT_REQUIRE_TOOLS=1` (CI), else a message and a skip.
fn tool_available(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert_ne!(
            std::env::var("TRACEJIT_REQUIRE_TOOLS").as_deref(),
            Ok("1"),
            "`{tool}` is required (TRACEJIT_REQUIRE_TOOLS=1) but not installed"
        );
        eprintln!("SKIPPED: `{tool}` is not installed");
    }
    found
}

/// Run `cmd`, killing it after `limit`; its stdout and stderr.
fn run_with_limit(cmd: &mut Command, limit: Duration) -> String {
    let out = std::env::temp_dir().join(format!("tracejit-gdb-test-{}.out", std::process::id()));
    let file = std::fs::File::create(&out).unwrap();
    let mut child = cmd
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let timed_out = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    assert!(!timed_out, "gdb ran longer than {limit:?}:\n{text}");
    text
}

/// GDB, stopped in the Rust function the compiled loop calls, shows the loop's symbol in
/// the backtrace with its trace-text file and the line of the `call_i` op, then the Rust
/// caller (`CompiledTrace::run` and this test's function) below it; disassembles the
/// loop's code by its symbol; and, stopped again in the call from the bridge (with stack
/// arguments pushed), shows the bridge's symbol and unwinds through it to the Rust caller.
#[test]
fn gdb_shows_the_trace_symbol_line_and_caller_in_a_backtrace() {
    if !tool_available("gdb") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let text = run_with_limit(
        Command::new("gdb")
            .args(["-nx", "-batch"])
            .args(["-ex", "set startup-with-shell off"])
            .args(["-ex", "set disable-randomization off"])
            .args(["-ex", "set pagination off"])
            .args(["-ex", "set width 0"])
            // At the function's first instruction: no frames of code inlined into it yet
            // (its address by its linkage name, which C expressions look up).
            .args(["-ex", "set language c"])
            .args(["-ex", "break *tracejit_callback_target"])
            .args(["-ex", "set language auto"])
            .args(["-ex", "run"])
            .args(["-ex", "echo @@bt\\n", "-ex", "bt"])
            .args(["-ex", "echo @@frame\\n", "-ex", "frame 1"])
            .args(["-ex", "echo @@disassemble\\n", "-ex", "disassemble"])
            .args(["-ex", "echo @@bridge\\n", "-ex", "delete"])
            .args(["-ex", "set language c"])
            .args(["-ex", "break *tracejit_callback_many"])
            .args(["-ex", "set language auto"])
            .args(["-ex", "continue", "-ex", "bt"])
            .args(["-ex", "echo @@end\\n", "-ex", "kill"])
            .arg("--args")
            .arg(&exe)
            .args([
                "--exact",
                "gdb_registered_code_runs_and_calls_back",
                "--nocapture",
                "--test-threads=1",
            ]),
        Duration::from_secs(300),
    );
    let section = |name: &str| -> &str {
        let start = text
            .find(&format!("@@{name}\n"))
            .unwrap_or_else(|| panic!("no {name} section in:\n{text}"));
        let rest = &text[start + name.len() + 3..];
        &rest[..rest.find("@@").unwrap_or(rest.len())]
    };
    let bt = section("bt");
    let lines: Vec<&str> = bt.lines().filter(|l| l.starts_with('#')).collect();
    assert!(lines.len() >= 4, "backtrace too short:\n{text}");
    assert!(lines[0].contains("tracejit_callback_target"), "frame 0:\n{text}");
    assert!(
        lines[1].contains(" tracejit_gdb_loop_") && lines[1].contains(".trace:"),
        "frame 1 is the compiled loop, with its trace text and line:\n{text}"
    );
    let dir = std::env::temp_dir();
    assert!(lines[1].contains(&format!("{}/tracejit-", dir.display())), "{text}");
    assert!(
        lines[2].contains("CompiledTrace::run"),
        "frame 2 is the Rust caller:\n{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("gdb_registered_code_runs_and_calls_back")),
        "the test function below:\n{text}"
    );
    // `frame 1` prints the line of the trace text the call returns to: the call op.
    let frame = section("frame");
    assert!(frame.contains("call_i("), "the call op's line:\n{text}");
    let dis = section("disassemble");
    assert!(
        dis.contains("Dump of assembler code for function tracejit_gdb_loop_") && dis.contains("call"),
        "{text}"
    );
    assert!(
        dis.lines().filter(|l| l.trim_start().starts_with("0x")).count() > 10,
        "{text}"
    );
    let bridge: Vec<&str> = section("bridge").lines().filter(|l| l.starts_with('#')).collect();
    assert!(bridge.len() >= 4, "bridge backtrace too short:\n{text}");
    assert!(bridge[0].contains("tracejit_callback_many"), "{text}");
    assert!(
        bridge[1].contains(" tracejit_gdb_bridge_")
            && bridge[1].contains("_bridge_0 ")
            && bridge[1].contains(".trace:"),
        "frame 1 is the bridge:\n{text}"
    );
    assert!(
        bridge[2].contains("CompiledTrace::run"),
        "frame 2 is the Rust caller:\n{text}"
    );
}

/// A little-endian reader over a byte slice.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        assert!(self.0.len() >= n, "record truncated");
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn cstr(&mut self) -> String {
        let n = self.0.iter().position(|&b| b == 0).expect("a NUL-terminated string");
        let s = String::from_utf8(self.take(n).to_vec()).unwrap();
        self.take(1);
        s
    }
}

/// One record of the dump: (id, timestamp, body).
fn records(mut r: Bytes<'_>) -> Vec<(u32, u64, Vec<u8>)> {
    let mut out = Vec::new();
    while !r.0.is_empty() {
        let id = r.u32();
        let size = r.u32() as usize;
        let ts = r.u64();
        assert!(size >= 16 && size.is_multiple_of(8), "record size {size}");
        out.push((id, ts, r.take(size - 16).to_vec()));
    }
    out
}

/// The jitdump file (perf's format: header, then a `JIT_CODE_DEBUG_INFO` and a
/// `JIT_CODE_LOAD` record per piece of code) has the root trace with its name, address,
/// size and bytes, and the bridge after it; their indices are distinct, their timestamps
/// in order, and each debug entry maps an op's code to the line of the trace text (written
/// beside the dump) that shows that op.
#[test]
fn jitdump_has_a_load_and_a_line_table_per_trace_and_bridge() {
    let dir = std::env::temp_dir().join(format!("tracejit-jitdump-test-{}", std::process::id()));
    let o = CompileOptions {
        jitdump: Some(dir.clone()),
        ..opts()
    };
    let (root, bridge) = loop_and_bridge("jitdump");
    let mut c = compile(&root, &o).unwrap();
    let root_code = c.code().to_vec();
    let root_addr = c.code().as_ptr() as u64;
    c.attach_bridge(GuardId(0), &bridge, &o).unwrap();

    let data = std::fs::read(dir.join(format!("jit-{}.dump", std::process::id()))).unwrap();
    let mut r = Bytes(&data);
    assert_eq!(r.u32(), 0x4A69_5444, "magic");
    assert_eq!(r.u32(), 1, "version");
    assert_eq!(r.u32(), 40, "header size");
    assert_eq!(r.u32(), 62, "EM_X86_64");
    r.u32();
    assert_eq!(r.u32(), std::process::id());
    let t0 = r.u64();
    assert_eq!(r.u64(), 0, "flags");
    let recs = records(r);
    assert_eq!(recs.len(), 4, "debug info and load, for the loop and the bridge");
    let mut last_ts = t0;
    let mut loads = Vec::new();
    for pair in recs.chunks(2) {
        let [(debug_id, ts1, debug), (load_id, ts2, load)] = pair else {
            unreachable!()
        };
        assert_eq!((*debug_id, *load_id), (2, 0), "JIT_CODE_DEBUG_INFO, then JIT_CODE_LOAD");
        assert!(last_ts <= *ts1 && ts1 <= ts2, "timestamps in order");
        last_ts = *ts2;
        let mut l = Bytes(load);
        assert_eq!(l.u32(), std::process::id());
        l.u32();
        let (vma, addr, size, index) = (l.u64(), l.u64(), l.u64(), l.u64());
        assert_eq!(vma, addr);
        let name = l.cstr();
        let code = l.take(size as usize).to_vec();
        assert!(l.0.len() < 8, "only padding after the code");
        let mut d = Bytes(debug);
        assert_eq!(d.u64(), addr, "the debug info names the code it describes");
        let n = d.u64();
        let entries: Vec<(u64, u32, String)> = (0..n)
            .map(|_| {
                let (a, line) = (d.u64(), d.u32());
                assert_eq!(d.u32(), 0, "discriminator");
                (a, line, d.cstr())
            })
            .collect();
        assert!(n > 0);
        for (a, _, _) in &entries {
            assert!((addr..addr + size).contains(a), "entry {a:#x} inside the code");
        }
        loads.push((addr, size, index, name, code, entries));
    }
    let (addr, size, index0, name, code, entries) = &loads[0];
    assert!(name.starts_with("tracejit_jitdump_loop_"), "{name}");
    assert_eq!((*addr, *size), (root_addr, root_code.len() as u64));
    assert_eq!(code, &root_code);
    let text_path = &entries[0].2;
    assert_eq!(text_path, &dir.join(format!("{name}.trace")).display().to_string());
    let text = std::fs::read_to_string(text_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let by_addr: HashMap<u64, u32> = entries.iter().map(|(a, l, _)| (*a, *l)).collect();
    let mut checked = 0;
    for (op, range) in c.op_ranges() {
        if range.is_empty() {
            continue;
        }
        let line = by_addr[&(addr + range.start as u64)];
        let opcode = root.ops[op.index()].opcode;
        assert!(
            lines[line as usize - 1].contains(opcode.name()),
            "{opcode:?} at line {line}:\n{text}"
        );
        checked += 1;
    }
    assert!(checked >= 4, "int_lt, guard_true, call_i, int_add, jump have code");
    let (_, bsize, index1, bname, bcode, _) = &loads[1];
    assert!(
        bname.starts_with("tracejit_jitdump_bridge_") && bname.ends_with("_bridge_0"),
        "{bname}"
    );
    assert!(*bsize > 0 && bcode.len() as u64 == *bsize);
    assert_ne!(index0, index1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The perf map after compiling and dropping many traces (whose code memory the code
/// cache hands to later traces) has no two entries over the same addresses, lists every
/// live trace, and at each address only the trace most recently compiled there.
#[test]
fn perf_map_lists_live_code_without_overlaps() {
    let o = CompileOptions {
        perf_map: true,
        ..opts()
    };
    let mut live = Vec::new();
    // Start address -> (size, name prefix) of the last trace compiled there.
    let mut last: HashMap<u64, (u64, String)> = HashMap::new();
    for k in 0..300 {
        let mut b = TraceBuilder::new();
        let x = b.input(Kind::Int);
        let mut v = x;
        // Sizes from a few bytes to several pages: mappings of different sizes get reused.
        for _ in 0..(k % 7) * (k % 5) * 40 {
            let one = b.const_int(1);
            v = b.op(Opcode::IntAdd, &[v, one]);
        }
        b.finish(&[v]);
        let mut t = b.build().unwrap();
        t.info.name = format!("perfmap {k}");
        let c = compile(&t, &o).unwrap();
        let start = c.code().as_ptr() as u64;
        last.insert(start, (c.code_size() as u64, format!("tracejit_perfmap_{k}_")));
        if k % 10 == 0 {
            live.push((start, c));
        }
    }
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let map = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut entries: Vec<(u64, u64, &str)> = map
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let start = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let size = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            (start, size, f.next().unwrap())
        })
        .collect();
    entries.sort();
    for w in entries.windows(2) {
        assert!(
            w[0].0 + w[0].1 <= w[1].0,
            "overlapping entries {:x?} and {:x?}",
            w[0],
            w[1]
        );
    }
    for &(start, size, name) in &entries {
        let (want_size, prefix) = &last[&start];
        assert!(
            size == *want_size && name.starts_with(prefix.as_str()),
            "{start:x} {size:x} {name}"
        );
    }
    assert!(last.len() < 300, "the code space handed freed memory to later traces");
    assert!(entries.len() <= last.len());
    for (start, c) in &live {
        assert!(
            entries
                .iter()
                .any(|&(s, size, _)| s == *start && size == c.code_size() as u64),
            "live trace at {start:x} listed"
        );
    }
}
