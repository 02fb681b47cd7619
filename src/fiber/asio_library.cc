// Asio's compiled part, once. ASIO_SEPARATE_COMPILATION (set on arenarpc_fiber, inherited by every
// target linking it) makes the other translation units declare Asio's non-template functions
// instead of each compiling its own inline copy: the build's biggest per-file cost after parsing.
#include <asio/impl/src.hpp>
