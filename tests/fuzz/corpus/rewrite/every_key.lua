parallel<mode=single, overdecompose=2, min_chunk=64KiB, favor=max-concurrency,
         memory="256MB", stream=relaxed, fuse=off, fastmath=true> do
  y = f(x)
end
