"""Thread settings shared by the PyTorch comparison scripts (bench/*_pytorch.py, compare_pytorch.py)."""


def set_openblas_threads(threads):
    """Debian's PyTorch does its matmuls (conv_tbc, transposed convs, Linear) in OpenBLAS
    (BLAS_INFO=generic), whose own thread pool torch.set_num_threads does not size: set it
    through the loaded library, so that a 1-thread run is one thread (our side's OpenBLAS runs
    single-threaded under oneTBB). Returns the library's path, or None when no OpenBLAS is
    loaded."""
    import ctypes
    with open("/proc/self/maps") as fh:
        libs = sorted({line.split()[-1] for line in fh if "libopenblas" in line})
    if not libs:
        return None
    ctypes.CDLL(libs[0]).openblas_set_num_threads(threads)
    return libs[0]
