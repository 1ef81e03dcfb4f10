// Reading a worker's identity from torchrun, Slurm and Open MPI variables.
#include <gtest/gtest.h>

#include "burst/launch/identity.h"
#include "burst/util/error.h"

namespace burst::launch {
namespace {

using Variables = std::map<std::string, std::string>;

std::optional<WorkerIdentity> detect(const Variables& variables) {
  return detect_identity(environment_from_map(variables));
}

std::string detect_error(const Variables& variables) {
  try {
    detect(variables);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

const Variables kTorchrun = {{"RANK", "3"},         {"WORLD_SIZE", "8"},
                             {"LOCAL_RANK", "1"},   {"MASTER_ADDR", "node0"},
                             {"MASTER_PORT", "1234"}};

Variables with(Variables variables, const std::string& name, const std::string& value) {
  variables[name] = value;
  return variables;
}

Variables without(Variables variables, const std::string& name) {
  variables.erase(name);
  return variables;
}

TEST(DetectIdentity, NothingSetIsAPlainProcess) {
  EXPECT_EQ(detect({}), std::nullopt);
  EXPECT_EQ(detect({{"PATH", "/bin"}, {"MASTER_ADDR", "x"}}), std::nullopt);
}

TEST(DetectIdentity, ReadsTorchrunVariables) {
  EXPECT_EQ(detect(kTorchrun), (WorkerIdentity{3, 8, 1, "node0", 1234, "torchrun", ""}));
}

TEST(DetectIdentity, ReadsSlurmVariables) {
  const Variables slurm = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "2"},
                           {"MASTER_ADDR", "gpu17"}};
  EXPECT_EQ(detect(slurm), (WorkerIdentity{5, 6, 2, "gpu17", kDefaultMasterPort, "slurm", ""}));
  // One node: loopback reaches rank 0, so MASTER_ADDR may be left out.
  EXPECT_EQ(detect(with(without(slurm, "MASTER_ADDR"), "SLURM_NNODES", "1")),
            (WorkerIdentity{5, 6, 2, kLoopbackAddress, kDefaultMasterPort, "slurm", ""}));
}

TEST(DetectIdentity, ReadsOpenMpiVariables) {
  const Variables mpi = {{"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "2"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                         {"MASTER_PORT", "4000"}};
  EXPECT_EQ(detect(mpi), (WorkerIdentity{1, 2, 1, kLoopbackAddress, 4000, "openmpi", ""}));
}

TEST(DetectIdentity, TorchrunWinsOverSlurmAndSlurmOverOpenMpi) {
  Variables everything = kTorchrun;
  everything.insert({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "0"},
                     {"OMPI_COMM_WORLD_SIZE", "1"}});
  EXPECT_EQ(detect(everything)->launcher, "torchrun");
  EXPECT_EQ(detect(without(without(everything, "RANK"), "WORLD_SIZE"))->launcher, "slurm");
  EXPECT_EQ(detect({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"},
                    {"SLURM_NTASKS", "4"}})
                ->launcher,
            "openmpi");  // SLURM_NTASKS alone (an allocation, no srun step) is not Slurm launch
}

TEST(DetectIdentity, DefaultsLocalRankAndRendezvousForOneMachine) {
  // A single process: loopback and the default port.
  EXPECT_EQ(detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}}),
            (WorkerIdentity{0, 1, 0, kLoopbackAddress, kDefaultMasterPort, "torchrun", ""}));
  // LOCAL_WORLD_SIZE == WORLD_SIZE: all ranks here; LOCAL_RANK defaults to RANK.
  EXPECT_EQ(detect({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "4"}}),
            (WorkerIdentity{2, 4, 2, kLoopbackAddress, kDefaultMasterPort, "torchrun", ""}));
}

TEST(DetectIdentity, RefusesAMissingMasterAddrWhenRanksMaySpanMachines) {
  const std::string error = detect_error(without(kTorchrun, "MASTER_ADDR"));
  EXPECT_NE(error.find("MASTER_ADDR is not set and the 8 ranks of this torchrun job may span "
                       "several machines"),
            std::string::npos)
      << error;
  EXPECT_NE(detect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_NNODES", "2"}})
                .find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "MASTER_ADDR", "")).find("MASTER_ADDR is empty"),
            std::string::npos);
}

TEST(DetectIdentity, RefusesMalformedValuesNamingTheVariable) {
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "two")).find("RANK=two: not a decimal integer"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", " 1")).find("RANK= 1: not a decimal integer"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "1x")).find("not a decimal integer"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "")).find("RANK=: not a decimal integer"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "99999999999999999999"))
                .find("not a decimal integer"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "-1")).find("RANK=-1: negative, expected 0 to 7"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "RANK", "8"))
                .find("RANK=8: out of range, expected 0 to 7 (below WORLD_SIZE=8)"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "WORLD_SIZE", "0"))
                .find("WORLD_SIZE=0: out of range, expected 1 to 1000000"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "LOCAL_RANK", "-2")).find("LOCAL_RANK=-2: negative"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "MASTER_PORT", "65536"))
                .find("MASTER_PORT=65536: out of range, expected 1 to 65535"),
            std::string::npos);
  EXPECT_NE(detect_error(with(kTorchrun, "MASTER_PORT", "0")).find("MASTER_PORT=0: out of range"),
            std::string::npos);
  EXPECT_NE(detect_error({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}})
                .find("SLURM_PROCID=4: out of range, expected 0 to 3 (below SLURM_NTASKS=4)"),
            std::string::npos);
  EXPECT_NE(detect_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "many"}})
                .find("OMPI_COMM_WORLD_SIZE=many: not a decimal integer"),
            std::string::npos);
}

TEST(DetectIdentity, RefusesHalfATorchrunLaunch) {
  EXPECT_NE(detect_error({{"RANK", "0"}}).find("WORLD_SIZE is not set; a torchrun launch sets "
                                               "both RANK and WORLD_SIZE"),
            std::string::npos);
  EXPECT_NE(detect_error({{"WORLD_SIZE", "2"}}).find("RANK is not set"), std::string::npos);
  EXPECT_NE(detect_error({{"SLURM_PROCID", "0"}}).find("SLURM_NTASKS is not set"),
            std::string::npos);
}

}  // namespace
}  // namespace burst::launch
