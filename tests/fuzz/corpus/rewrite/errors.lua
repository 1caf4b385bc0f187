parallel<colour=red> do end
