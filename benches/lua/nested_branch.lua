-- nested_branch.tj: xorshift32, a branch taken one iteration in four and a rarer one inside.
local bit = require("bit")
local band, bxor, lshift, rshift = bit.band, bit.bxor, bit.lshift, bit.rshift
return function(N)
  local x = bit.tobit(2463534242)
  local rare = 0
  local rarer = 0
  local acc = 0
  local i = 0
  while i < N do
    x = bxor(x, lshift(x, 13))
    x = bxor(x, rshift(x, 17))
    x = bxor(x, lshift(x, 5))
    if band(x, 3) == 0 then
      if band(x, 12) == 0 then
        rarer = rarer + 1
      else
        rare = rare + band(x, 15)
      end
    else
      acc = band(acc + band(x, 0xff), 0xffffff)
    end
    i = i + 1
  end
  return rare .. " " .. rarer .. " " .. acc
end
