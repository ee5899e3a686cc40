-- sum.tj: the sum of a range.
return function(N)
  local s = 0
  local i = 0
  while i < N do
    s = s + i
    i = i + 1
  end
  return tostring(s)
end
