-- Measures LuaJIT's trace compiler on one program of this directory for the `latency`
-- benchmark: `luajit measure.lua MODE PROGRAM.lua N`, printing one line of `key=value` words.
--
-- MODE `events` (`luajit measure.lua events PROGRAM.lua N REPS`): default JIT parameters;
--   the program is loaded afresh (new prototypes, so new traces) and run REPS times in this
--   process, one line per run: the time from each trace's `start` event to its `stop` (or
--   `abort`) event (recording, which interprets the recorded iteration, plus optimization
--   and assembly), summed over the run (total_us), traces, aborts, and ir (IR instructions
--   of the traces, from jit.util.traceinfo). The first line is the first run in a process.
-- MODE `on`: `hotloop=1`, the CPU time of the whole call run(N) and the number of traces.
-- MODE `off`: the JIT off, the CPU time of the whole call run(N).
local mode, path, n = arg[1], arg[2], tonumber(arg[3])
local ffi = require("ffi")
local jutil = require("jit.util")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } lat_timespec;
  int clock_gettime(int clk, lat_timespec *tp);
]]
local ts = ffi.new("lat_timespec")
local CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID = 1, 2
local function now(clk)
  ffi.C.clock_gettime(clk, ts)
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

local traces, aborts, ir, total, started = 0, 0, 0, 0, nil
local function on_trace(what, tr)
  if what == "start" then
    started = now(CLOCK_MONOTONIC)
  elseif what == "stop" or what == "abort" then
    if started then
      total = total + (now(CLOCK_MONOTONIC) - started)
      started = nil
    end
    if what == "stop" then
      traces = traces + 1
      ir = ir + jutil.traceinfo(tr).nins
    else
      aborts = aborts + 1
    end
  end
end

if mode == "events" then
  jit.attach(on_trace, "trace")
  for _ = 1, tonumber(arg[4] or 1) do
    traces, aborts, ir, total = 0, 0, 0, 0
    local out = dofile(path)(n)
    print(string.format("traces=%d aborts=%d ir=%d total_us=%.1f out=%s", traces, aborts, ir, total, out))
  end
  jit.attach(on_trace)
elseif mode == "on" or mode == "off" then
  if mode == "off" then
    jit.off()
  else
    jit.opt.start("hotloop=1")
    jit.attach(on_trace, "trace")
  end
  local run = dofile(path)
  local t0 = now(CLOCK_PROCESS_CPUTIME_ID)
  local out = run(n)
  local t = now(CLOCK_PROCESS_CPUTIME_ID) - t0
  print(string.format("traces=%d aborts=%d ir=%d run_us=%.1f out=%s", traces, aborts, ir, t, out))
else
  error("usage: luajit measure.lua events|on|off PROGRAM.lua N")
end
