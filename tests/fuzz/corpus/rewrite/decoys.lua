local s = 'parallel<mode=all> do'
local t = "parallel<mode=\"all\"> do"
local u = [==[ ]] parallel<mode=all> do ]=] ]==]
-- parallel<mode=all> do
--[[ parallel<mode=all>
 do ]]
if parallel<x then y() end
if parallel <= x then y() end
local parallel <const> = 3
t.parallel = 1
obj:parallel(1)
local v = "line\z
   parallel<mode=all> do"
local w = "a\
parallel<mode=all> do"
goto parallel ::parallel::
