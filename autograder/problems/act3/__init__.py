"""Act 3: profiling and compilers; the exercises that fuse, compile and capture what a profile shows."""
