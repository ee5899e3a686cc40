-- pairs.tj: two short-lived pairs per iteration.
local bit = require("bit")
local band = bit.band
return function(N)
  local s = 0
  local i = 0
  while i < N do
    local p = { i, i + 1 }
    local q = { p[2], p[1] * 2 }
    s = band(s + q[1] - q[2] + 7, 0xffffff)
    i = i + 1
  end
  return tostring(s)
end
