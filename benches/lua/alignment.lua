-- alignment.tj: aligned addresses and alignment checks that never fail.
local bit = require("bit")
local band, bnot, rshift = bit.band, bit.bnot, bit.rshift
return function(N)
  local base = 4096
  local bad = 0
  local s = 0
  local i = 0
  while i < N do
    local p = base + band(i * 24, bnot(7))
    if band(p, 7) ~= 0 then bad = bad + 1 end
    local q = p + 16
    if band(q, 7) ~= 0 then bad = bad + 1 end
    s = band(s + rshift(q, 3), 0xffffff)
    i = i + 1
  end
  return s .. " " .. bad
end
