local tycho = require "tycho"
parallel<mode=all> do
  local x = tycho.zeros({10})
end
