// The build without MPI (PAGEDW2V_DISTRIBUTED off, or no MPI found): its stand-in for ranks,
// src/dist/no_mpi.cpp, compiled into this test beside a build that has MPI, so that both are
// tested on every machine. One process trains alone; a launch with several ranks is refused
// with one line that says what to install.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/error.hpp"
#include "dist/ranks.hpp"

namespace pagedw2v {
namespace {

/// Clears every launcher's variable that says how many ranks a job has.
void no_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    ::unsetenv(name);
  }
}

TEST(WithoutMpi, OneProcessTrainsAlone) {
  no_launcher();
  EXPECT_EQ(dist::join_ranks(nullptr, ""), nullptr);
  // A launcher of one rank is one process too.
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EXPECT_EQ(dist::join_ranks(nullptr, ""), nullptr);
  no_launcher();
}

TEST(WithoutMpi, SeveralRanksAreRefusedWithOneLine) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    SCOPED_TRACE(name);
    no_launcher();
    ::setenv(name, "2", 1);
    try {
      dist::join_ranks(nullptr, "");
      ADD_FAILURE() << "a launch with two ranks was not refused";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("built without MPI"), std::string::npos) << what;
      EXPECT_NE(what.find("libopenmpi-dev"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  no_launcher();
}

}  // namespace
}  // namespace pagedw2v
