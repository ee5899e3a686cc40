-- float.tj: a float accumulator and a square root per iteration.
local sqrt = math.sqrt
return function(N)
  local s = 0.0
  local i = 0
  while i < N do
    s = s + sqrt(i) * 0.5
    i = i + 1
  end
  return string.format("%d %s", math.floor(s), s)
end
