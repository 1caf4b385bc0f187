parallel<favor=debug>do
