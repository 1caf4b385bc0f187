parallel<parallel=task> do
  for i = 1, 4 do
    parallel<favor=debug> do
      parallel<memory=off> do (g)(i) end
    end
  end
end
