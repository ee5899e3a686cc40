//! The `tracejit` binary on bad command lines and bad input files: exit status 2 with the
//! argument parser's suggestion for a usage error, 1 with a clear message for a file that is
//! missing, not text, or without traces; `--help` and `--version` exit 0.

mod support;
use support::*;

/// Every subcommand.
const COMMANDS: [&str; 10] = [
    "parse",
    "print",
    "interp",
    "opt",
    "run",
    "mine",
    "check",
    "eval-pypy",
    "fuzz",
    "synth-rules",
];

/// The command lines that read one trace file `f`.
fn readers(f: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["parse", f],
        vec!["print", f],
        vec!["interp", f],
        vec!["opt", f],
        vec!["run", f, "--inputs", "1"],
        vec!["mine", f],
        vec!["check", f],
        vec!["eval-pypy", f],
    ]
}

#[test]
fn a_file_without_traces_warns_and_fails() {
    let d = temp_dir("empty");
    for (name, text) in [("empty.txt", ""), ("comments.txt", "# nothing here\n\n")] {
        let f = write(&d, name, text);
        for cmd in readers(&f) {
            let o = tracejit(&cmd);
            assert_eq!(o.code, 1, "{cmd:?}: {}", o.stderr);
            assert!(
                o.stderr.contains(&format!("warning: {f}: no traces found")),
                "{cmd:?}: {}",
                o.stderr
            );
            assert!(o.stdout.is_empty(), "{cmd:?}: {}", o.stdout);
        }
    }
}

#[test]
fn a_file_without_traces_among_others_is_only_a_warning() {
    let d = temp_dir("empty_among");
    let empty = write(&d, "empty.txt", "");
    let good = write(&d, "andand.txt", AND_AND);
    let o = tracejit(&["mine", "--no-opt", &empty, &good]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("warning: {empty}: no traces found")),
        "{}",
        o.stderr
    );
    assert!(o.stdout.contains("total: 1 findings in 1 patterns"), "{}", o.stdout);
}

#[test]
fn a_binary_file_is_reported_with_the_offset_of_its_first_non_text_byte() {
    let d = temp_dir("binary");
    let mut bytes = b"[i0]\nfinish(i0)\n".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0x01]);
    let f = write(&d, "binary.txt", &bytes);
    let nul = write(&d, "nul.txt", b"[i0]\n\0finish(i0)\n");
    for (file, message) in [
        (&f, format!("{f}: not UTF-8 text at byte 16")),
        (&nul, format!("{nul}: not a text file: NUL byte at byte 5")),
    ] {
        for cmd in readers(file) {
            let o = tracejit(&cmd);
            assert_eq!(o.code, 1, "{cmd:?}: {}", o.stderr);
            assert!(o.stderr.contains(&message), "{cmd:?}: {}", o.stderr);
            assert!(o.stdout.is_empty(), "{cmd:?}: {}", o.stdout);
        }
    }
}

#[test]
fn a_missing_file_is_named_and_fails() {
    let d = temp_dir("missing");
    let missing = d.join("no_such_file.txt");
    let f = missing.to_str().unwrap();
    let good = write(&d, "good.txt", "[i0]\nfinish(i0)\n");
    let mut cmds = readers(f);
    cmds.push(vec!["check", &good, "--optimized", f]);
    for cmd in cmds {
        let o = tracejit(&cmd);
        assert_eq!(o.code, 1, "{cmd:?}: {}", o.stderr);
        assert_eq!(o.stderr.trim_end(), format!("error: {f}: no such file"), "{cmd:?}");
    }
}

#[test]
fn an_unknown_subcommand_is_a_usage_error_with_a_suggestion() {
    let o = tracejit(&["prase", "x.txt"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unrecognized subcommand 'prase'"), "{}", o.stderr);
    assert!(
        o.stderr.contains("a similar subcommand exists: 'parse'"),
        "{}",
        o.stderr
    );
    let o = tracejit(&["eval-pypi", "x.txt"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("'eval-pypy'"), "{}", o.stderr);
}

#[test]
fn a_misspelled_option_is_a_usage_error_with_a_suggestion() {
    for (cmd, typo, meant) in [
        (&["parse", "x.txt"][..], "--jsn", "--json"),
        (&["check", "x.txt"][..], "--optimised", "--optimized"),
        (&["opt", "x.txt"][..], "--no-rule", "--no-rules"),
        (&["fuzz"][..], "--cout", "--count"),
    ] {
        let mut args = cmd.to_vec();
        args.push(typo);
        let o = tracejit(&args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains(&format!("unexpected argument '{typo}'")),
            "{args:?}: {}",
            o.stderr
        );
        assert!(
            o.stderr.contains(&format!("a similar argument exists: '{meant}'")),
            "{args:?}: {}",
            o.stderr
        );
    }
}

#[test]
fn bad_option_values_and_missing_arguments_are_usage_errors() {
    let bare = tracejit(&[]);
    assert_eq!(bare.code, 2);
    assert!(bare.stderr.contains("Usage: tracejit <COMMAND>"), "{}", bare.stderr);
    for args in [
        &["mine"][..],
        &["mine", "--limit", "many", "x"][..],
        &["mine", "--seconds", "0", "x"][..],
        &["check", "x", "--jobs", "0"][..],
        &["interp", "x", "--inputs", "1", "--random", "2"][..],
        &["run", "x", "--tree", "--hooks"][..],
        &["synth-rules", "--op", "int_frob"][..],
        &["parse", "a", "b"][..],
    ] {
        let o = tracejit(args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error: "), "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains("For more information, try '--help'."),
            "{args:?}: {}",
            o.stderr
        );
    }
}

#[test]
fn a_usage_error_found_after_parsing_shows_the_commands_usage() {
    let d = temp_dir("late_usage");
    let f = write(&d, "mul.txt", MUL);
    let o = tracejit(&["run", &f]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.starts_with("error: "), "{}", o.stderr);
    assert!(
        o.stderr.contains("takes 2 inputs: give --inputs or --random"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("Usage: tracejit run [OPTIONS] <FILE>"),
        "{}",
        o.stderr
    );
}

#[test]
fn progress_bars_stay_off_a_stderr_that_is_not_a_terminal() {
    let d = temp_dir("no_bar");
    let f = write(&d, "loop.txt", LOOP);
    for args in [
        &["fuzz", "--count", "3", "--out", d.to_str().unwrap()][..],
        &["check", &f][..],
        &["mine", &f][..],
    ] {
        let o = tracejit(args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr, "", "{args:?}");
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_of_every_subcommand_exits_0() {
    let top = ok(&["--help"]);
    assert_eq!(ok(&["help"]), top);
    for cmd in COMMANDS {
        assert!(
            top.contains(&format!("\n  {cmd} ")),
            "{cmd} missing from the help:\n{top}"
        );
        let help = ok(&[cmd, "--help"]);
        assert!(help.contains(&format!("Usage: tracejit {cmd}")), "{help}");
        assert!(help.contains("-h, --help"), "{help}");
        assert_eq!(ok(&["help", cmd]), help, "{cmd}");
    }
    // Every option has a help text: no option line ends at its name.
    let opt = ok(&["opt", "--help"]);
    assert!(opt.contains("--no-rules"), "{opt}");
    for line in opt.lines().filter(|l| l.trim_start().starts_with("--")) {
        assert!(line.trim().contains("  "), "option without help: {line}");
    }
}

#[test]
fn version_exits_0() {
    assert_eq!(
        ok(&["--version"]).trim(),
        format!("tracejit {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(ok(&["-V"]).trim(), format!("tracejit {}", env!("CARGO_PKG_VERSION")));
}
