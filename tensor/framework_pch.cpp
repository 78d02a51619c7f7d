// Host of the framework libraries' shared precompiled header (tensor/CMakeLists.txt); no code of
// its own.
