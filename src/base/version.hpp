#pragma once
/// @file version.hpp
/// The version of the build: what `pagedw2v --version` prints and the files a run writes record.

namespace pagedw2v {

/// The version of pagedw2v (CMake's project version): `--version`, checkpoints, embeddings.h5.
const char* version();

}  // namespace pagedw2v
