// Which builds run on which GPUs, decided without a GPU (backend/cuda/arch_support.h): the
// availability probe relies on it instead of loading a kernel, which would create a CUDA context
// on device 0 in every process.
#include <gtest/gtest.h>

#include "backend/cuda/arch_support.h"

namespace {

using ember::cuda_impl::arch_list_runs_on;
using ember::cuda_impl::ArchVerdict;

TEST(CudaArchSupport, TheDefaultBuildRunsOnAmpereHopperAndNewer) {
  // CMake's default here: "80-real;90", which the build passes as "80-real,90".
  for (const char* archs : {"80-real;90", "80-real,90"}) {
    SCOPED_TRACE(archs);
    EXPECT_EQ(arch_list_runs_on(archs, 8, 0), ArchVerdict::Runs);   // A100: sm_80 code
    EXPECT_EQ(arch_list_runs_on(archs, 8, 6), ArchVerdict::Runs);   // RTX 30xx: sm_80 code runs on 8.6
    EXPECT_EQ(arch_list_runs_on(archs, 8, 9), ArchVerdict::Runs);   // L4, RTX 40xx
    EXPECT_EQ(arch_list_runs_on(archs, 9, 0), ArchVerdict::Runs);   // H100, H200
    EXPECT_EQ(arch_list_runs_on(archs, 10, 0), ArchVerdict::Runs);  // B200: compute_90 PTX, compiled by the driver
    EXPECT_EQ(arch_list_runs_on(archs, 12, 0), ArchVerdict::Runs);
    EXPECT_EQ(arch_list_runs_on(archs, 7, 5), ArchVerdict::DoesNotRun);  // T4
    EXPECT_EQ(arch_list_runs_on(archs, 7, 0), ArchVerdict::DoesNotRun);  // V100
  }
}

TEST(CudaArchSupport, MachineCodeRunsOnlyWithinItsMajorVersion) {
  EXPECT_EQ(arch_list_runs_on("86-real", 8, 9), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("86-real", 8, 0), ArchVerdict::DoesNotRun);  // older minor
  EXPECT_EQ(arch_list_runs_on("80-real", 9, 0), ArchVerdict::DoesNotRun);  // no PTX to compile
  EXPECT_EQ(arch_list_runs_on("80", 9, 0), ArchVerdict::Runs);             // "80" carries compute_80 PTX
  EXPECT_EQ(arch_list_runs_on("120-real", 12, 1), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("100-real", 12, 0), ArchVerdict::DoesNotRun);
}

TEST(CudaArchSupport, PtxOnlyBuildsRunOnTheirArchitectureAndNewer) {
  EXPECT_EQ(arch_list_runs_on("90-virtual", 9, 0), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("90-virtual", 10, 3), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("90-virtual", 8, 9), ArchVerdict::DoesNotRun);
}

TEST(CudaArchSupport, ArchitectureSpecificAndFamilyCode) {
  EXPECT_EQ(arch_list_runs_on("90a", 9, 0), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("90a", 10, 0), ArchVerdict::DoesNotRun);  // its PTX is 9.0-only too
  EXPECT_EQ(arch_list_runs_on("100a-real", 10, 3), ArchVerdict::DoesNotRun);
  EXPECT_EQ(arch_list_runs_on("100f", 10, 3), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("100f", 12, 0), ArchVerdict::DoesNotRun);
}

TEST(CudaArchSupport, ListsWithoutNumbersAreLeftToTheRuntime) {
  EXPECT_EQ(arch_list_runs_on("native", 9, 0), ArchVerdict::Unknown);
  EXPECT_EQ(arch_list_runs_on("all-major", 7, 5), ArchVerdict::Unknown);
  // A numbered entry that fits decides; one that does not leaves the unknown one to the runtime.
  EXPECT_EQ(arch_list_runs_on("native;90", 9, 0), ArchVerdict::Runs);
  EXPECT_EQ(arch_list_runs_on("80-real;native", 7, 5), ArchVerdict::Unknown);
  EXPECT_EQ(arch_list_runs_on("", 9, 0), ArchVerdict::DoesNotRun);
  EXPECT_EQ(arch_list_runs_on("9", 9, 0), ArchVerdict::Unknown);  // not an architecture number
}

}  // namespace
