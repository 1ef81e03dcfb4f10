// The multi-tenant cluster's schedules, derived by hand (docs/cluster-sim.md), and the
// validation against the published simulator's Tiresias figures.
#include "burst/cluster_sim/multi_tenant.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include <gtest/gtest.h>

#include "burst/util/error.h"

namespace burst::cluster_sim {
namespace multi_tenant_test {

// Every iteration takes 1 s on any placement; the "host" application's devices are idle half
// of it.
class FixedTimer : public IterationTimer {
 public:
  IterationTime time(const ApplicationTable& application, int64_t batch, const Placement&) override {
    IterationTime time;
    time.seconds = 1;
    time.samples = batch;
    time.idle_fraction = application.name == "host" ? 0.5 : 0;
    return time;
  }
  std::string name() const override { return "fixed"; }
};

ApplicationTables fixed_applications() {
  ApplicationTables tables;
  for (const char* name : {"plain", "host"}) {
    ApplicationTable& table = tables[name];
    table.name = name;
    table.min_local_batch = 1;
  }
  return tables;
}

// A job that ran `duration_s` on `gpus` GPUs: that many 1 s iterations.
TraceJob job(const char* name, double submit_s, int gpus, double duration_s, const char* application = "plain") {
  TraceJob job;
  job.name = name;
  job.submit_s = submit_s;
  job.gpus = gpus;
  job.duration_s = duration_s;
  job.application = application;
  job.batch = 64;
  return job;
}

std::map<std::string, double> jcts(const MultiTenantResult& result) {
  std::map<std::string, double> out;
  for (const JobOutcome& outcome : result.jobs) out[outcome.name] = outcome.jct_s();
  return out;
}

// `jobs` on `nodes` under `policy`, timed by `timer`: 10 s rounds, no restart cost.
MultiTenantResult run_on(IterationTimer& timer, std::vector<TraceJob> jobs, const ClusterNodes& nodes,
                         ClusterPolicy policy) {
  const ApplicationTables tables = fixed_applications();
  const JobModel model(tables, timer, 4);
  JobTrace trace;
  trace.path = "test";
  trace.jobs = std::move(jobs);
  MultiTenantOptions options;
  options.interval_s = 10;
  options.restart_s = 0;
  options.policy = policy;
  return simulate_multi_tenant(trace, model, nodes, options);
}

struct Fixture {
  ApplicationTables tables = fixed_applications();
  FixedTimer timer;
  JobModel model{tables, timer, 4};
  JobTrace trace;
  MultiTenantOptions options;
  Fixture() {
    trace.path = "test";
    options.interval_s = 10;
    options.restart_s = 0;
  }
  MultiTenantResult run(ClusterPolicy policy) {
    options.policy = policy;
    return simulate_multi_tenant(trace, model, ClusterNodes{{4}, {}, {}}, options);
  }
};

// A (2 GPUs, 100 s) and B (4 GPUs, 50 s) at 0, C (1 GPU, 30 s) at 10, on one node of 4.
Fixture three_jobs() {
  Fixture fixture;
  fixture.trace.jobs = {job("A", 0, 2, 100), job("B", 0, 4, 50), job("C", 10, 1, 30)};
  return fixture;
}

// FIFO: A runs 0-100; B waits for 4 free GPUs, runs 100-150; C waits behind B, runs 150-180.
TEST(MultiTenant, FifoKeepsArrivalOrder) {
  Fixture fixture = three_jobs();
  const MultiTenantResult result = fixture.run(ClusterPolicy::Fifo);
  const auto jct = jcts(result);
  EXPECT_DOUBLE_EQ(jct.at("A"), 100);
  EXPECT_DOUBLE_EQ(jct.at("B"), 150);
  EXPECT_DOUBLE_EQ(jct.at("C"), 170);
  EXPECT_DOUBLE_EQ(result.avg_jct_s, 140);
  EXPECT_DOUBLE_EQ(result.makespan_s, 180);
  // GPU-seconds 200 + 200 + 30 over 4 GPUs x 180 s.
  EXPECT_NEAR(result.utilisation, 430.0 / 720.0, 1e-12);
}

// Tiresias without demotion: C does not wait behind B (it fits beside A): 10-40. B 100-150.
TEST(MultiTenant, TiresiasAdmitsWhatFits) {
  Fixture fixture = three_jobs();
  const auto jct = jcts(fixture.run(ClusterPolicy::Tiresias));
  EXPECT_DOUBLE_EQ(jct.at("A"), 100);
  EXPECT_DOUBLE_EQ(jct.at("B"), 150);
  EXPECT_DOUBLE_EQ(jct.at("C"), 30);
}

// Demotion at 60 GPU-seconds. A (2 GPUs) reaches it after 30 s of running: at the round at
// 30 it goes to the second queue, and B (first queue) takes all 4 GPUs, preempting A (30 s
// done) and C (20 of 30 s done). B (4 GPUs) reaches 60 GPU-seconds after 15 s: at the next
// round, 50 (C's finish was due at 40 but C was preempted; B's demotion at 45 rounds up), it
// is demoted behind A. Queue order then: C, A, B: C runs 50-60, A 50-120 (70 s left), B waits
// for 4 free GPUs until the round at 120 and runs its last 30 s: 150.
TEST(MultiTenant, TiresiasDemotesAndPreempts) {
  Fixture fixture = three_jobs();
  fixture.options.demotion_gpu_s = 60;
  const MultiTenantResult result = fixture.run(ClusterPolicy::Tiresias);
  const auto jct = jcts(result);
  EXPECT_DOUBLE_EQ(jct.at("C"), 50);
  EXPECT_DOUBLE_EQ(jct.at("A"), 120);
  EXPECT_DOUBLE_EQ(jct.at("B"), 150);
  for (const JobOutcome& outcome : result.jobs) EXPECT_EQ(outcome.restarts, 1) << outcome.name;
}

// The events of the schedule above, job C's and B's.
TEST(MultiTenant, EventsTellTheSchedule) {
  Fixture fixture = three_jobs();
  fixture.options.demotion_gpu_s = 60;
  fixture.options.record_events = true;
  const MultiTenantResult result = fixture.run(ClusterPolicy::Tiresias);
  const auto of_job = [&](size_t job) {
    std::vector<std::tuple<double, std::string, int>> events;
    for (const ClusterEvent& event : result.events) {
      if (event.job == job) events.emplace_back(event.time_s, cluster_event_name(event.kind), event.gpus);
    }
    return events;
  };
  using E = std::tuple<double, std::string, int>;
  EXPECT_EQ(of_job(2), (std::vector<E>{{10, "arrival", 0}, {10, "start", 1}, {30, "preempt", 0}, {50, "start", 1},
                                       {60, "finish", 0}}));
  EXPECT_EQ(of_job(1), (std::vector<E>{{0, "arrival", 0}, {30, "start", 4}, {50, "preempt", 0}, {120, "start", 4},
                                       {150, "finish", 0}}));
}

// The restart cost delays each start: FIFO with 5 s restarts: A restarts 0-5, runs 5-105;
// its GPUs go back at the round at 110: B 115-165; C at the round at 170: 175-205.
TEST(MultiTenant, RestartsCostTheirTime) {
  Fixture fixture = three_jobs();
  fixture.options.restart_s = 5;
  const auto jct = jcts(fixture.run(ClusterPolicy::Fifo));
  EXPECT_DOUBLE_EQ(jct.at("A"), 105);
  EXPECT_DOUBLE_EQ(jct.at("B"), 165);
  EXPECT_DOUBLE_EQ(jct.at("C"), 195);
}

// H (4 GPUs, 100 s, devices idle half the time) and G (1 GPU, 40 s) at 0 on 4 GPUs. Tiresias:
// G waits for H: H 100, G 140. Multiplexing (the stated constants: 1.05 slowdown, 0.8 of the
// idle time): G runs in H's idle time at 0.5 x 0.8 = 0.4 of its speed (more than the 4 x
// (1 - 1/1.05) = 0.19 GPUs H loses) and finishes at 40 / 0.4 = 100; H runs at 1 / 1.05
// meanwhile (100 / 1.05 of its work), then alone: 200 - 100 / 1.05.
TEST(MultiTenant, BackgroundJobRunsInTheIdleGap) {
  Fixture fixture;
  fixture.trace.jobs = {job("H", 0, 4, 100, "host"), job("G", 0, 1, 40)};
  const auto alone = jcts(fixture.run(ClusterPolicy::Tiresias));
  EXPECT_DOUBLE_EQ(alone.at("H"), 100);
  EXPECT_DOUBLE_EQ(alone.at("G"), 140);
  const MultiTenantResult result = fixture.run(ClusterPolicy::BurstMultiplex);
  const auto jct = jcts(result);
  EXPECT_NEAR(jct.at("G"), 100, 1e-9);
  EXPECT_NEAR(jct.at("H"), 200 - 100 / 1.05, 1e-9);
  EXPECT_NEAR(result.jobs[1].background_seconds, 100, 1e-9);
  fixture.options.record_events = true;
  const MultiTenantResult traced = fixture.run(ClusterPolicy::BurstMultiplex);
  std::vector<std::string> kinds;
  for (const ClusterEvent& event : traced.events) kinds.push_back(cluster_event_name(event.kind));
  EXPECT_EQ(kinds, (std::vector<std::string>{"arrival", "arrival", "start", "background", "finish", "finish"}));

}

// A timer that simulates the pair: the guest gets half its speed, the host 1.02x slower (or,
// with `greedy`, 1.2x: above max_host_slowdown, so the guest waits). H and G as above: G
// finishes at 40 / 0.5 = 80; H makes 80 / 1.02 of its 100 iterations meanwhile, then runs
// alone: 80 + 100 - 80 / 1.02.
class SharingTimer : public FixedTimer {
 public:
  explicit SharingTimer(bool greedy) : greedy_(greedy) {}
  std::optional<SharedDevice> share(const ApplicationTable&, int64_t, const Placement&, const ApplicationTable&,
                                    int64_t) override {
    return SharedDevice{greedy_ ? 1.2 : 1.02, 0.5};
  }

 private:
  bool greedy_;
};

TEST(MultiTenant, TheJobModelsSharingFiguresDecide) {
  for (const bool greedy : {false, true}) {
    SharingTimer timer(greedy);
    const auto jct = jcts(run_on(timer, {job("H", 0, 4, 100, "host"), job("G", 0, 1, 40)}, ClusterNodes{{4}, {}, {}},
                                 ClusterPolicy::BurstMultiplex));
    EXPECT_NEAR(jct.at("G"), greedy ? 140 : 80, 1e-9);
    EXPECT_NEAR(jct.at("H"), greedy ? 100 : 180 - 80 / 1.02, 1e-9);
  }
}

// A host whose devices are busy (the guest's share below min_guest_share) takes no background job.
TEST(MultiTenant, NoBackgroundWithoutIdleTime) {
  Fixture fixture;
  fixture.trace.jobs = {job("H", 0, 4, 100), job("G", 0, 1, 40)};
  const auto jct = jcts(fixture.run(ClusterPolicy::BurstMultiplex));
  EXPECT_DOUBLE_EQ(jct.at("G"), 140);
}

// Strong scaling, with iterations that scale perfectly (FixedTimer's 1 s is per iteration of
// a job whose work is in iterations, so use a timer that halves with twice the GPUs).
class ScalingTimer : public IterationTimer {
 public:
  IterationTime time(const ApplicationTable&, int64_t batch, const Placement& placement) override {
    return {1.0 / placement.total(), batch, 0, -1};
  }
  std::string name() const override { return "scaling"; }
};

// One job of 1 GPU asking 400 s alone on 4 GPUs: it doubles twice (each step adds GPUs at
// full efficiency and saves more than two restarts) and runs 100 s.
TEST(MultiTenant, StrongScalingLendsFreeGpus) {
  ScalingTimer timer;
  const MultiTenantResult result = run_on(timer, {job("S", 0, 1, 400)}, ClusterNodes{{4}, {}, {}}, ClusterPolicy::BurstScale);
  EXPECT_EQ(result.jobs[0].gpus_most, 4);
  EXPECT_NEAR(result.jobs[0].jct_s(), 100, 1e-9);
}

// Iterations take 1 s on kind 0 and 2 s on kind 1, and a placement across kinds the slower.
class KindTimer : public IterationTimer {
 public:
  IterationTime time(const ApplicationTable&, int64_t batch, const Placement& placement) override {
    const bool slow = std::find(placement.kinds.begin(), placement.kinds.end(), 1) != placement.kinds.end();
    return {slow ? 2.0 : 1.0, batch, 0, -1};
  }
  std::string name() const override { return "kinds"; }
};

// Two nodes of 4, one of each kind. A and B (4 GPUs, 100 iterations each) go to one kind each
// (the kind with the most free GPUs, the first on ties): A 100 s on kind 0, B 200 s on kind 1.
// Then C (6 GPUs) spans both kinds at the slower pace: 100 iterations from 200 (the round after
// B) take 200 s.
TEST(MultiTenant, JobsKeepToOneKindWhenOneHasRoom) {
  KindTimer timer;
  const auto jct = jcts(run_on(timer, {job("A", 0, 4, 100), job("B", 0, 4, 100), job("C", 0, 6, 100)},
                               ClusterNodes{{4, 4}, {0, 1}, {"fast", "slow"}}, ClusterPolicy::Fifo));
  EXPECT_DOUBLE_EQ(jct.at("A"), 100);
  EXPECT_DOUBLE_EQ(jct.at("B"), 200);
  EXPECT_DOUBLE_EQ(jct.at("C"), 400);
}

TEST(MultiTenant, OversizedJobsAreRefusedOrSkipped) {
  Fixture fixture;
  fixture.trace.jobs = {job("big", 0, 8, 10), job("small", 0, 1, 10)};
  fixture.trace.jobs[0].line = 2;
  try {
    fixture.run(ClusterPolicy::Fifo);
    FAIL() << "expected a UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("test:2: job 'big' asks for 8 GPUs, the cluster has 4"), std::string::npos)
        << error.what();
  }
  fixture.options.skip_oversized = true;
  const MultiTenantResult result = fixture.run(ClusterPolicy::Fifo);
  EXPECT_EQ(result.skipped_oversized, 1u);
  EXPECT_EQ(result.jobs.size(), 1u);
}

// A job whose tables make it run for ~3e13 years ends the run with a UserError, not a hang.
class GlacialTimer : public IterationTimer {
 public:
  IterationTime time(const ApplicationTable&, int64_t batch, const Placement&) override { return {1e6, batch, 0, -1}; }
  std::string name() const override { return "glacial"; }
};

TEST(MultiTenant, AJobThatNeverEndsIsAUserError) {
  ApplicationTables tables = fixed_applications();
  ApplicationTable& slow = tables["plain"];
  slow.validation[64] = {ValidationEpoch{1e15, 1, 1, 1}};
  slow.init_batch = slow.max_batch = 64;
  slow.max_epochs = 1;
  slow.epoch_end = {0, 1e15};
  GlacialTimer timer;
  const JobModel model(tables, timer, 4);
  JobTrace trace;
  trace.path = "test";
  trace.jobs = {job("forever", 0, 1, -1)};
  try {
    simulate_multi_tenant(trace, model, ClusterNodes{{4}, {}, {}}, MultiTenantOptions{});
    FAIL() << "expected a UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("has not finished its jobs after"), std::string::npos) << error.what();
  }
}

TEST(MultiTenant, UnknownPolicyNamesThePolicies) {
  try {
    parse_cluster_policy("lottery");
    FAIL();
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              "unknown policy 'lottery' (policies: fifo, tiresias, burst-scale, burst-multiplex, burst)");
  }
}

// The published simulator's Tiresias average JCTs (16 nodes x 4 GPUs; data/pollux-traces/README.md).
TEST(MultiTenant, TiresiasMatchesThePublishedSimulatorWithinTenPercent) {
  const double published[] = {2474, 5145, 3876, 3280, 3501, 3470, 5480, 5080};
  const ApplicationTables tables = read_application_tables(BURST_POLLUX_DIR "/applications");
  MeasuredTimer timer;
  const JobModel model(tables, timer, 4);
  MultiTenantOptions options;  // Tiresias, 60 s rounds, 30 s restarts
  double ours = 0, theirs = 0;
  for (int w = 1; w <= 8; ++w) {
    const JobTrace trace = read_job_trace(BURST_POLLUX_DIR "/workloads/workload-" + std::to_string(w) + ".csv");
    const MultiTenantResult result = simulate_multi_tenant(trace, model, ClusterNodes{std::vector<int>(16, 4), {}, {}}, options);
    EXPECT_NEAR(result.avg_jct_s / published[w - 1], 1.0, 0.10) << "workload " << w;
    ours += result.avg_jct_s;
    theirs += published[w - 1];
  }
  EXPECT_NEAR(ours / theirs, 1.0, 0.10);
}

}  // namespace multi_tenant_test
}  // namespace burst::cluster_sim
