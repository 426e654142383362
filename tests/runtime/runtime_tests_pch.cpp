// The translation unit that owns the runtime suites' precompiled LibTorch header (CMakeLists.txt).
