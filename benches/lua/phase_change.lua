-- phase_change.tj: one path for the first half of the iterations, another for the second.
local bit = require("bit")
local band, bxor = bit.band, bit.bxor
return function(N)
  local s = 0
  local t = 0
  local i = 0
  local h = math.floor(N / 2)
  while i < N do
    if i < h then
      s = band(s + i * 3, 0xffffff)
    else
      t = band(t + bxor(i, 5), 0xffffff)
    end
    i = i + 1
  end
  return s .. " " .. t
end
