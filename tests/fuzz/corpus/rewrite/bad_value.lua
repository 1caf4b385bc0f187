x = 1
parallel<mode=sometimes> do end
