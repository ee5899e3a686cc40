-- fnv_hash.tj: FNV-1a over an array of 1024 bytes, N rounds (h * 16777619 modulo 2^32 as
-- (h << 24) + h * 403, which stays exact in doubles).
local bit = require("bit")
local band, bxor, lshift, rshift, tobit = bit.band, bit.bxor, bit.lshift, bit.rshift, bit.tobit
return function(N)
  local n = 1024
  local a = {}
  local j = 0
  while j < n do
    a[j] = band(rshift(tobit(j * 2654435761 % 4294967296), 7), 0xff)
    j = j + 1
  end
  local h = tobit(2166136261)
  local r = 0
  while r < N do
    j = 0
    while j < n do
      local x = bxor(h, a[j])
      h = tobit(lshift(x, 24) + (x % 4294967296) * 403)
      j = j + 1
    end
    r = r + 1
  end
  return tostring(h % 4294967296)
end
