//! `CompileOptions::default()` reads no environment; `CompileOptions::from_env()` does. A
//! test binary of its own: it sets environment variables, which no other test may race.

use backend_x86_64::CompileOptions;

#[test]
fn only_from_env_reads_the_environment() {
    std::env::set_var("TRACEJIT_LOG", "opt,asm");
    std::env::set_var("TRACEJIT_PERFMAP", "1");
    std::env::set_var("TRACEJIT_GDB", "1");
    std::env::set_var("TRACEJIT_JITDUMP", "/tmp/dumps");
    let d = CompileOptions::default();
    assert!(!d.log_asm && !d.perf_map && !d.gdb_jit && d.jitdump.is_none());
    let e = CompileOptions::from_env();
    assert!(e.log_asm && e.perf_map && e.gdb_jit);
    assert_eq!(e.jitdump.as_deref(), Some(std::path::Path::new("/tmp/dumps")));
    assert_eq!(
        (e.int_regs, e.float_regs, e.memory),
        (d.int_regs, d.float_regs, d.memory)
    );
    std::env::set_var("TRACEJIT_LOG", "opt");
    std::env::set_var("TRACEJIT_PERFMAP", "0");
    std::env::set_var("TRACEJIT_GDB", "");
    std::env::set_var("TRACEJIT_JITDUMP", "");
    let e = CompileOptions::from_env();
    assert!(!e.log_asm && !e.perf_map && !e.gdb_jit && e.jitdump.is_none());
}
