parallel<mode=all
--c> do
error("line 4")
end
