x = 0x1p4 + 1e-3 + .5 + 3 parallel<overdecompose=16> do x = x..'' end
