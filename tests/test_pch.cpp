// Host of the test executables' shared precompiled header (tests/CMakeLists.txt); no code of its
// own.
