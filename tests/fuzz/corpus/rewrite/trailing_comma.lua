parallel<mode='all',> do end
