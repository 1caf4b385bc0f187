parallel<mode=all>
do
  x()
end
