// The trainer's arithmetic for resuming a checkpoint in a job of another size (train/job.h).
#include <gtest/gtest.h>

#include "train/job.h"

using ember::data::DataLoaderState;
using ember::train::resume_state;

TEST(ResumeState, SameRanksResumeExactly) { EXPECT_EQ(resume_state({3, 17}, 2, 2, 40, 40), (DataLoaderState{3, 17})); }

TEST(ResumeState, PositionsScaleWithTheRanks) {
  // 15 steps of 2 ranks are 30 steps of one rank and 10 of three.
  EXPECT_EQ(resume_state({0, 15}, 2, 1, 40, 80), (DataLoaderState{0, 30}));
  EXPECT_EQ(resume_state({0, 15}, 2, 3, 40, 27), (DataLoaderState{0, 10}));
  // 7 steps of 2 ranks on 3: 14/3 steps, rounded down so that no sample is skipped.
  EXPECT_EQ(resume_state({1, 7}, 2, 3, 40, 27), (DataLoaderState{1, 4}));
}

TEST(ResumeState, AnEpochsEndStaysAnEpochsEnd) {
  EXPECT_EQ(resume_state({2, 40}, 2, 3, 40, 27), (DataLoaderState{2, 27}));
  EXPECT_EQ(resume_state({0, 0}, 3, 1, 27, 80), (DataLoaderState{0, 0}));
}

TEST(JobAlone, IsRankZeroOfOne) {
  EXPECT_EQ(ember::train::job_rank(), 0);
  EXPECT_EQ(ember::train::job_size(), 1);
  EXPECT_TRUE(ember::train::is_writer());
  EXPECT_EQ(ember::train::sum_over_ranks({1.5, 2}), (std::vector<double>{1.5, 2}));
  EXPECT_EQ(ember::train::any_rank({true, false}), (std::vector<bool>{true, false}));
}
