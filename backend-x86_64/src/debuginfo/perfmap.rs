//! The perf map, `/tmp/perf-<pid>.map`: a line `START SIZE NAME` (hexadecimal) per piece of
//! code, which `perf report` reads to name samples in anonymous executable memory.
//!
//! perf reads the file after the run and does not know when an entry was valid, so two
//! entries over the same addresses make its answer arbitrary (freed code's memory is reused
//! by later traces through the code space). The file therefore lists, for each address,
//! at most the code most recently placed there: every live piece, and a freed piece until
//! code overlapping it is compiled (samples taken while it ran still get its name). A new
//! piece that overlaps no entry is appended (one `write`); one that overlaps freed entries
//! drops them and the file is rewritten (to a temporary file renamed over the map, so a
//! reader never sees half a file). Freed entries are also dropped, with a rewrite, when more
//! than [`MAX_FREED`] accumulate. The first entry of a process rewrites the file, so an
//! older process's map with the same pid is not mixed in. The backend owns the file: lines
//! that others append to it are lost at the next rewrite.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

/// Freed entries kept at most.
const MAX_FREED: usize = 4096;

/// One line of the map.
struct Line {
    end: u64,
    name: String,
    /// Which registration it belongs to.
    id: u64,
    live: bool,
}

/// The map's lines by start address (their ranges never overlap), and the open file.
struct PerfMap {
    lines: BTreeMap<u64, Line>,
    freed: usize,
    next_id: u64,
    file: Option<File>,
}

static MAP: Mutex<PerfMap> = Mutex::new(PerfMap {
    lines: BTreeMap::new(),
    freed: 0,
    next_id: 0,
    file: None,
});

fn path() -> String {
    format!("/tmp/perf-{}.map", std::process::id())
}

impl PerfMap {
    /// The text of one line.
    fn line(start: u64, l: &Line) -> String {
        format!("{start:x} {:x} {}\n", l.end - start, l.name)
    }

    /// Write every line to a fresh file and rename it over the map.
    fn rewrite(&mut self) -> std::io::Result<()> {
        let path = path();
        let tmp = format!("{path}.tmp");
        let text: String = self.lines.iter().map(|(&s, l)| Self::line(s, l)).collect();
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        std::fs::rename(&tmp, &path)?;
        self.file = Some(f);
        Ok(())
    }

    /// Append one line (the file must be open).
    fn append(&mut self, start: u64) -> std::io::Result<()> {
        let text = Self::line(start, &self.lines[&start]);
        match &mut self.file {
            Some(f) => f.write_all(text.as_bytes()),
            None => self.rewrite(),
        }
    }

    /// The start addresses of the lines overlapping `start..end`.
    fn overlapping(&self, start: u64, end: u64) -> Vec<u64> {
        self.lines
            .range(..end)
            .rev()
            .take_while(|(_, l)| l.end > start)
            .map(|(&s, _)| s)
            .collect()
    }
}

/// A live piece's line of the map; marked freed when dropped.
pub(crate) struct Entry {
    start: u64,
    id: u64,
}

/// List `len` bytes of code at `start` named `name`. `None` (after a message on stderr)
/// when the file cannot be written.
pub(crate) fn add(start: u64, len: u64, name: &str) -> Option<Entry> {
    let mut map = MAP.lock().unwrap_or_else(|e| e.into_inner());
    let end = start + len.max(1);
    let old = map.overlapping(start, end);
    for s in &old {
        if let Some(l) = map.lines.remove(s) {
            if !l.live {
                map.freed -= 1;
            }
        }
    }
    let id = map.next_id;
    map.next_id += 1;
    let name = name.replace('\n', " ");
    map.lines.insert(
        start,
        Line {
            end,
            name,
            id,
            live: true,
        },
    );
    let written = if old.is_empty() && map.file.is_some() {
        map.append(start)
    } else {
        map.rewrite()
    };
    match written {
        Ok(()) => Some(Entry { start, id }),
        Err(e) => {
            map.lines.remove(&start);
            eprintln!("tracejit: cannot write {}: {e}", path());
            None
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut map = MAP.lock().unwrap_or_else(|e| e.into_inner());
        let Some(line) = map.lines.get_mut(&self.start).filter(|l| l.id == self.id) else {
            return;
        };
        line.live = false;
        map.freed += 1;
        if map.freed > MAX_FREED {
            map.lines.retain(|_, l| l.live);
            map.freed = 0;
            let _ = map.rewrite();
        }
    }
}
