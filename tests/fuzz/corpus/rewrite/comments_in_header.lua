parallel -- a scope
< --[[ its
 options ]] mode
= all -- all processors
, fuse = true
> --[==[ then
]==] do
  z()
end
