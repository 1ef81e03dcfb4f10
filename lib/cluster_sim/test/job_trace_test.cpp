#include "burst/cluster_sim/job_trace.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::cluster_sim {
namespace job_trace_test {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    read_job_trace(path);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(JobTrace, ReadsThePolluxFormatInSubmissionOrder) {
  const std::string path = write_file("w.csv",
                                      "name,time,application,num_replicas,batch_size\n"
                                      "b,20,ncf,1,32768\n"
                                      "a,5,cifar10,6,2048\n");
  const JobTrace trace = read_job_trace(path);
  EXPECT_EQ(trace.format, "pollux");
  ASSERT_EQ(trace.jobs.size(), 2u);
  EXPECT_EQ(trace.jobs[0].name, "a");
  EXPECT_EQ(trace.jobs[0].gpus, 6);
  EXPECT_EQ(trace.jobs[0].batch, 2048);
  EXPECT_EQ(trace.jobs[0].line, 3);
  EXPECT_LT(trace.jobs[0].duration_s, 0);
}

// Philly: times from the first submission, applications by GPU time, a window of days.
TEST(JobTrace, ReadsThePhillyFormat) {
  const std::string path = write_file("p.csv",
                                      "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                      "2017-10-02 00:00:10,100.0,2,200.0,x\n"
                                      "2017-10-01 23:59:50,7200.0,8,57600.0,y\n"
                                      "2017-10-03 00:00:00,60.0,1,60.0,z\n");
  const JobTrace trace = read_job_trace(path);
  EXPECT_EQ(trace.format, "philly");
  ASSERT_EQ(trace.jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(trace.jobs[0].submit_s, 0);
  EXPECT_DOUBLE_EQ(trace.jobs[1].submit_s, 20);
  EXPECT_EQ(trace.jobs[0].application, "yolov3");   // 16 GPU-hours
  EXPECT_EQ(trace.jobs[1].application, "cifar10");  // under 1 GPU-hour, first row
  EXPECT_EQ(trace.jobs[2].application, "cifar10");  // third row
  EXPECT_DOUBLE_EQ(trace.jobs[0].duration_s, 7200);
  EXPECT_EQ(trace.jobs[0].gpus, 8);
  const JobTrace window = read_job_trace(path, TraceWindow{0.5, 1});
  ASSERT_EQ(window.jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(window.jobs[0].submit_s, 43210);  // from 2017-10-02 11:59:50, half a day in
}

TEST(JobTrace, MalformedLinesNameTheFileAndLine) {
  const std::string header = "name,time,application,num_replicas,batch_size\n";
  const std::string fields = write_file("f.csv", header + "a,5,cifar10,6\n");
  EXPECT_EQ(error_of(fields), fields + ":2: expected 5 fields (name, time, application, num_replicas, batch_size), got 4");
  const std::string number = write_file("n.csv", header + "a,5,cifar10,6,2048\nb,x,cifar10,1,1\n");
  EXPECT_EQ(error_of(number), number + ":3: time must be a number in [0, 1000000000], got 'x'");
  const std::string late = write_file("l.csv", header + "a,1e12,cifar10,1,2048\n");
  EXPECT_EQ(error_of(late), late + ":2: time must be a number in [0, 1000000000], got '1e12'");
  const std::string gpus = write_file("g.csv", header + "a,5,cifar10,0,2048\n");
  EXPECT_EQ(error_of(gpus), gpus + ":2: num_replicas must be a whole number in [1, 1048576], got '0'");
  const std::string stamp = write_file("t.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,x\n");
  EXPECT_EQ(error_of(stamp), stamp + ":2: timestamp must be YYYY-MM-DD HH:MM:SS, got '2017-13-01 00:00:00'");
  const std::string header_only = write_file("h.csv", "a,b\n1,2\n");
  EXPECT_NE(error_of(header_only).find(header_only + ":1: not a job trace"), std::string::npos);
  EXPECT_EQ(error_of("/nonexistent/trace.csv"), "cannot read '/nonexistent/trace.csv'");
}

}  // namespace job_trace_test
}  // namespace burst::cluster_sim
