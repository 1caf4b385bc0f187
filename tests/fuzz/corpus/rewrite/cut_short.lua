parallel<mode=all,
