// Step programs of hand-written plans, worked out by hand in the comments.
#include "burst/program/step_program.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"
#include "hand_plan.h"

namespace burst::program {
namespace {

using plan::testing::hand_plan;
using plan::testing::shard;

std::vector<OpKind> kinds(const StepProgram& program, int rank) {
  std::vector<OpKind> result;
  for (const Op& op : program.ops.at(static_cast<size_t>(rank))) result.push_back(op.kind);
  return result;
}

std::vector<graph::LayerId> bucket_layers(const StepProgram& program, size_t bucket) {
  return program.buckets.at(bucket).layers;
}

// input [250] (1000 B a sample) -> a (relu) -> b (relu), global batch 2 on 2 ranks:
// input r0 [0,2); a split r0 [0,1), r1 [1,2); b r0 [0,2). Three placements: three segments.
// Messages, tags in creation order: input->a [1,2) r0->r1 (tag 0; no gradient goes back into
// the data); a->b [1,2) r1->r0 (tag 1) and its gradient r0->r1 (tag 2). The [0,1) pieces stay
// on r0 (copies). No parameters: no buckets, no update.
TEST(StepProgram, ThreeLayerChainOnTwoRanks) {
  graph::GraphBuilder b("chain3");
  b.relu("b", b.relu("a", b.input("input", {250})));
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = hand_plan(graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 1), shard(1, 1, 2)}, {shard(0, 0, 2)}});
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  EXPECT_EQ(program.segments.size(), 3u);
  EXPECT_TRUE(program.buckets.empty());
  EXPECT_EQ(format_rank_program(program, graph, 0),
            "rank 0: 14 ops\n"
            "    0  0F0  input [0, 2)\n"
            "    1  0SEND_F0  input -> a.0 [1, 2) to r1, tag 0, 1000 B\n"
            "    2  1COPY_F0  input -> a.0 [0, 1)\n"
            "    3  1F0  a [0, 1)\n"
            "    4  2COPY_F0  a -> b.0 [0, 1)\n"
            "    5  2RECV_F0  a -> b.0 [1, 2) from r1, tag 1, 1000 B\n"
            "    6  2F0  b [0, 2)\n"
            "    7  2B0  b [0, 2)\n"
            "    8  2SEND_B0  a -> b.0 [1, 2) to r1, tag 2, 1000 B\n"
            "    9  1COPY_B0  a -> b.0 [0, 1)\n"
            "   10  1B0  a [0, 1)\n"
            "   11  0B0  input [0, 2)\n"
            "   12  REDUCE_LOSS\n"
            "   13  WAIT_SENDS\n");
  EXPECT_EQ(format_rank_program(program, graph, 1),
            "rank 1: 7 ops\n"
            "    0  1RECV_F0  input -> a.0 [1, 2) from r0, tag 0, 1000 B\n"
            "    1  1F0  a [1, 2)\n"
            "    2  1SEND_F0  a -> b.0 [1, 2) to r0, tag 1, 1000 B\n"
            "    3  1RECV_B0  a -> b.0 [1, 2) from r0, tag 2, 1000 B\n"
            "    4  1B0  a [1, 2)\n"
            "    5  REDUCE_LOSS\n"
            "    6  WAIT_SENDS\n");
}

// Data parallelism: every layer has the same placement, so the whole model is one segment
// with no messages, and the gradients (fc2 then fc1 in backward order: 4x(2x4+2) + 4x(8x4+4)
// bytes = 40 + 144, under the 1 MiB first bucket) fill one bucket, started after fc1's backward (the group's last layer)
// and before the input's.
TEST(StepProgram, DataParallelIsOneSegmentAndOneBucket) {
  graph::GraphBuilder b("mlp");
  b.cross_entropy("loss", b.linear("fc2", b.relu("relu", b.linear("fc1", b.input("input", {8}), 4)), 2));
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = plan::plan_data_parallel(graph, 2, 8);
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  EXPECT_EQ(program.segments.size(), 1u);
  EXPECT_TRUE(program.pieces.empty());
  ASSERT_EQ(program.buckets.size(), 1u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{3, 1}));
  EXPECT_EQ(program.buckets[0].bytes, 184);
  EXPECT_EQ(program.groups, (std::vector<std::vector<int>>{{0, 1}}));
  using K = OpKind;
  const std::vector<OpKind> expected{K::Forward,  K::Forward,  K::Forward,   K::Forward,       K::Forward,
                                     K::Backward, K::Backward, K::Backward,  K::Backward,      K::AllReduce,
                                     K::Backward, K::WaitAllReduce, K::Update, K::ReduceLoss};
  EXPECT_EQ(kinds(program, 0), expected);
  EXPECT_EQ(kinds(program, 1), expected);

  // A cap below fc2's 40 bytes closes a bucket at every layer: fc2's, then fc1's.
  ProgramOptions small;
  small.bucket_bytes = 30;
  const StepProgram split = build_step_program(graph, plan, small);
  ASSERT_EQ(split.buckets.size(), 2u);
  EXPECT_EQ(bucket_layers(split, 0), (std::vector<graph::LayerId>{3}));
  EXPECT_EQ(bucket_layers(split, 1), (std::vector<graph::LayerId>{1}));
  // Without the loss reduction the program ends at the update.
  BuildScope quiet;
  quiet.reduce_loss = false;
  EXPECT_EQ(build_step_program(graph, plan, {}, quiet).ops[0].back().kind, OpKind::Update);
}

// Two branches at the same time on disjoint ranks: input on r0..r3 (one sample each, batch
// 4), p (linear) on r0,r1 and q (linear) on r2,r3 (two samples each), sum = add(p, q) on
// r0..r3 again. Four segments (sum has input's placement but is not next to it). Each
// branch's gradients are a bucket of its own group; q's closes first (higher id).
// r0 gets p's input as [0,1) copied and [1,2) from r1; sum's inputs on r0 are sample 0 of p
// (a copy) and of q (from r2, which holds q's [0,2)).
TEST(StepProgram, BranchesOnDisjointRanksRunConcurrently) {
  graph::GraphBuilder b("branch");
  const std::string input = b.input("input", {4});
  b.add_("sum", {b.linear("p", input, 4), b.linear("q", input, 4)});
  const graph::Graph graph = std::move(b).build();
  const auto all = std::vector<cost::Shard>{shard(0, 0, 1), shard(1, 1, 2), shard(2, 2, 3), shard(3, 3, 4)};
  const plan::Plan plan =
      hand_plan(graph, 4, 4, {all, {shard(0, 0, 2), shard(1, 2, 4)}, {shard(2, 0, 2), shard(3, 2, 4)}, all});
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  EXPECT_EQ(program.segments.size(), 4u);
  EXPECT_EQ(program.groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  ASSERT_EQ(program.buckets.size(), 2u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{2}));  // q on {2, 3}
  EXPECT_EQ(bucket_layers(program, 1), (std::vector<graph::LayerId>{1}));  // p on {0, 1}
  const std::string r0 = format_rank_program(program, graph, 0);
  EXPECT_NE(r0.find("1COPY_F0  input -> p.0 [0, 1)"), std::string::npos) << r0;
  EXPECT_NE(r0.find("1RECV_F0  input -> p.0 [1, 2) from r1"), std::string::npos) << r0;
  EXPECT_NE(r0.find("3RECV_F0  q -> sum.1 [0, 1) from r2"), std::string::npos) << r0;
  EXPECT_NE(r0.find("ALLREDUCE b1  ranks [0, 1]"), std::string::npos) << r0;
  EXPECT_EQ(r0.find(" q ["), std::string::npos) << r0;  // r0 never computes q
  EXPECT_EQ(r0.find("b0"), std::string::npos) << r0;    // nor joins q's bucket
}

// An uneven 5/5/6 split of batch 16 (fc1 on r0..r2) feeding an even 8/8 one (fc2 on r0, r1).
// fc1's output is 4 floats, 16 B a sample. fc2's r0 [0,8) = [0,5) from r0 (copy) + [5,8)
// from r1 (48 B); r1 [8,16) = [8,10) from r1 (copy) + [10,16) from r2 (96 B). Gradients go
// back the same ranges. r2 takes no part in fc2: it only sends [10,16) and gets its gradient.
TEST(StepProgram, UnevenSplitsExchangeExactlyTheOverlaps) {
  graph::GraphBuilder b("uneven");
  b.linear("fc2", b.linear("fc1", b.input("input", {8}), 4), 2);
  const graph::Graph graph = std::move(b).build();
  const auto uneven = std::vector<cost::Shard>{shard(0, 0, 5), shard(1, 5, 10), shard(2, 10, 16)};
  const plan::Plan plan = hand_plan(graph, 3, 16, {uneven, uneven, {shard(0, 0, 8), shard(1, 8, 16)}});
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  std::vector<std::tuple<bool, int, int, int64_t, int64_t, int64_t>> remote;
  for (const Piece& piece : program.pieces) {
    if (!piece.local()) {
      remote.emplace_back(piece.gradient, piece.sender, piece.receiver, piece.samples.begin, piece.samples.end, piece.bytes);
    }
  }
  const std::vector<std::tuple<bool, int, int, int64_t, int64_t, int64_t>> expected{
      {false, 1, 0, 5, 8, 48}, {false, 2, 1, 10, 16, 96}, {true, 0, 1, 5, 8, 48}, {true, 1, 2, 10, 16, 96}};
  EXPECT_EQ(remote, expected);
  EXPECT_EQ(program.segments.size(), 2u);  // input and fc1 share the 5/5/6 placement
  const std::string r2 = format_rank_program(program, graph, 2);
  EXPECT_NE(r2.find("0SEND_F0  fc1 -> fc2.0 [10, 16) to r1, tag 1, 96 B"), std::string::npos) << r2;
  EXPECT_NE(r2.find("0RECV_B0  fc1 -> fc2.0 [10, 16) from r1, tag 3, 96 B"), std::string::npos) << r2;
}

// DDP's first bucket: fc3 (4x2+2 = 10 params, 40 B), fc2 (4x4+4, 80 B), fc1 (8x4+4, 144 B),
// data parallel on 2 ranks. In backward order with a 100 B first bucket and a 1000 B cap:
// fc3 (40) + fc2 (120 >= 100) close the first bucket, fc1 (the group's last) the second. With
// a 30 B first bucket: fc3 alone, then fc2 + fc1.
TEST(StepProgram, FirstBucketIsSmallAsInDdp) {
  graph::GraphBuilder b("three");
  b.linear("fc3", b.linear("fc2", b.linear("fc1", b.input("input", {8}), 4), 4), 2);
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = plan::plan_data_parallel(graph, 2, 4);
  ProgramOptions options;
  options.bucket_bytes = 1000;
  options.first_bucket_bytes = 100;
  StepProgram program = build_step_program(graph, plan, options);
  ASSERT_EQ(program.buckets.size(), 2u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{3, 2}));
  EXPECT_EQ(bucket_layers(program, 1), (std::vector<graph::LayerId>{1}));
  options.first_bucket_bytes = 30;
  program = build_step_program(graph, plan, options);
  ASSERT_EQ(program.buckets.size(), 2u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{3}));
  EXPECT_EQ(bucket_layers(program, 1), (std::vector<graph::LayerId>{2, 1}));
}

// One layer on one rank among four: fc2 on r2 alone between fc1 and fc3 on r0..r3. fc2 has
// no sync group; fc1 and fc3 share the group {0..3} and, with the default cap, one bucket
// that fc1 (the group's last layer in backward order) closes. A cap below fc3's gradient
// bytes (4x(4x4+4) = 80) gives each its own bucket.
TEST(StepProgram, OneLayerOnOneRankAmongFour) {
  graph::GraphBuilder b("lonely");
  b.linear("fc3", b.linear("fc2", b.linear("fc1", b.input("input", {4}), 4), 4), 4);
  const graph::Graph graph = std::move(b).build();
  const auto all = plan::even_split({0, 1, 2, 3}, 8);
  const plan::Plan plan = hand_plan(graph, 4, 8, {all, all, {shard(2, 0, 8)}, all});
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  EXPECT_EQ(program.segments.size(), 3u);
  ASSERT_EQ(program.buckets.size(), 1u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{3, 1}));
  EXPECT_EQ(program.buckets[0].closed_by, 1);
  ProgramOptions small;
  small.bucket_bytes = 50;
  const StepProgram split = build_step_program(graph, plan, small);
  ASSERT_EQ(split.buckets.size(), 2u);
  EXPECT_EQ(bucket_layers(split, 0), (std::vector<graph::LayerId>{3}));
  EXPECT_EQ(bucket_layers(split, 1), (std::vector<graph::LayerId>{1}));
  // r2 gathers fc2's whole input: its own [4,6) copied, 3 messages from r0, r1, r3.
  int receives = 0;
  for (const Op& op : program.ops[2]) {
    if (op.kind == OpKind::RecvActivation && !program.pieces[static_cast<size_t>(op.piece)].local()) ++receives;
  }
  EXPECT_EQ(receives, 3);
}

// A tied head away from its embedding: ids [4] (vocab 10) -> wte embedding [4, 3] on r0 ->
// fc linear [4, 3] split r0 [0,1), r1 [1,2) -> head, tied to wte, on r1 alone -> loss on r1;
// global batch 2. wte's weight (30 floats, 120 B) is held on r0 (its own) and r1 (a copy the
// head uses): its gradient group is {0, 1}, although wte runs on r0 alone. fc's group is
// {0, 1} too, so one bucket holds fc (12 floats) and wte, closed by wte: r1 starts and waits
// for it too (after its own backward), and both ranks update.
TEST(StepProgram, ATiedWeightIsSummedOverTheEmbeddingsAndTheHeadsRanks) {
  graph::GraphBuilder b("tied");
  std::string x = b.embedding("wte", b.token_input("ids", 4, 10), 10, 3);
  x = b.linear("fc", x, 3);
  x = b.linear("head", x, 10, false, "wte");
  b.cross_entropy("loss", x);
  const graph::Graph graph = std::move(b).build();
  const auto split = plan::even_split({0, 1}, 2);
  const plan::Plan plan = hand_plan(graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 2)}, split, {shard(1, 0, 2)}, {shard(1, 0, 2)}});
  EXPECT_EQ(plan::weight_holders(plan, graph, 1), (std::vector<int>{0, 1}));
  EXPECT_EQ(plan::sync_group(plan, graph, 1), (std::vector<int>{0, 1}));
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);
  ASSERT_EQ(program.buckets.size(), 1u);
  EXPECT_EQ(bucket_layers(program, 0), (std::vector<graph::LayerId>{2, 1}));
  EXPECT_EQ(program.buckets[0].closed_by, 1);
  EXPECT_EQ(program.buckets[0].bytes, 48 + 120);
  EXPECT_EQ(program.groups.at(static_cast<size_t>(program.buckets[0].group)), (std::vector<int>{0, 1}));
  for (const int rank : {0, 1}) {
    const std::vector<OpKind> ops = kinds(program, rank);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), OpKind::AllReduce), 1) << "rank " << rank;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), OpKind::Update), 1) << "rank " << rank;
  }
}

// One program per class (BuildScope::one_rank_per_class). Data parallelism of three
// linear layers at batch 7 on 5 ranks: r0 and r1 hold 2 samples, r2-r4 one; no messages.
// Two classes, r0 for r1 and r2 for r3 and r4: their ops as in the full build, the others
// empty. On 8 ranks at batch 2, r2-r7 hold no shard (-1). The plan above, where fc2 gathers
// on r2 from r0, r1 and r3, has every rank exchanging messages: each its own.
TEST(StepProgram, OneRankPerClassBuildsOneProgramPerClass) {
  graph::GraphBuilder b("three");
  b.linear("fc3", b.linear("fc2", b.linear("fc1", b.input("input", {4}), 4), 4), 4);
  const graph::Graph graph = std::move(b).build();
  BuildScope per_class;
  per_class.one_rank_per_class = true;
  const plan::Plan uneven = plan::plan_data_parallel(graph, 5, 7);
  const StepProgram every = build_step_program(graph, uneven);
  const StepProgram classes = build_step_program(graph, uneven, {}, per_class);
  EXPECT_EQ(every.representative, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(classes.representative, (std::vector<int32_t>{0, 0, 2, 2, 2}));
  for (const int rank : {0, 2}) EXPECT_EQ(kinds(classes, rank), kinds(every, rank)) << rank;
  for (const int rank : {1, 3, 4}) EXPECT_TRUE(classes.ops[static_cast<size_t>(rank)].empty()) << rank;
  EXPECT_EQ(classes.buckets.size(), every.buckets.size());

  const StepProgram idle = build_step_program(graph, plan::plan_data_parallel(graph, 8, 2), {}, per_class);
  EXPECT_EQ(idle.representative, (std::vector<int32_t>{0, 0, -1, -1, -1, -1, -1, -1}));

  const auto all = plan::even_split({0, 1, 2, 3}, 8);
  const plan::Plan gather = hand_plan(graph, 4, 8, {all, all, {shard(2, 0, 8)}, all});
  EXPECT_EQ(build_step_program(graph, gather, {}, per_class).representative, (std::vector<int32_t>{0, 1, 2, 3}));
}

// A concat of 100 inputs (beyond the old 64-inputs-per-layer tag scheme): relu i on rank
// i % 2 with the whole batch 4, concat split r0 [0,2), r1 [2,4). Each relu sends one half
// and keeps the other: 100 activation and 100 gradient messages, tags 0..199, all distinct.
// input and relu0 share a placement (r0, [0,4)); every other relu starts a segment: 101 + 1.
TEST(StepProgram, ConcatOfAHundredInputsHasUniqueTags) {
  graph::GraphBuilder b("wide");
  const std::string input = b.input("input", {2});
  std::vector<std::string> branches;
  for (int i = 0; i < 100; ++i) branches.push_back(b.relu("relu" + std::to_string(i), input));
  b.concat("cat", branches);
  const graph::Graph graph = std::move(b).build();
  std::vector<std::vector<cost::Shard>> shards{{shard(0, 0, 4)}};
  for (int i = 0; i < 100; ++i) shards.push_back({shard(i % 2, 0, 4)});
  shards.push_back({shard(0, 0, 2), shard(1, 2, 4)});
  const plan::Plan plan = hand_plan(graph, 2, 4, shards);
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);

  std::set<uint32_t> tags;
  for (const Piece& piece : program.pieces) {
    if (!piece.local()) tags.insert(piece.tag);
  }
  EXPECT_EQ(tags.size(), 200u + 50u);  // + input -> relu i on r1: 50 activation messages
  EXPECT_EQ(*tags.rbegin(), 249u);
  EXPECT_EQ(program.segments.size(), 101u);
}

// A layer reading one producer twice: sum = add(a, a), a on r0 [0,2), sum split r0 [0,1),
// r1 [1,2). Each input position is its own use: sample 1 of a goes to r1 twice (tags 0 and
// 1), and its gradient comes back twice (tags 2 and 3), each received once.
TEST(StepProgram, AProducerReadTwiceIsSentOncePerInput) {
  graph::GraphBuilder b("twice");
  const std::string a = b.relu("a", b.input("input", {4}));
  b.add_("sum", {a, a});
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = hand_plan(graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 2)}, {shard(0, 0, 1), shard(1, 1, 2)}});
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);
  int sends = 0, receives = 0;
  for (const Op& op : program.ops[0]) sends += op.kind == OpKind::SendActivation || op.kind == OpKind::SendGradient;
  for (const Op& op : program.ops[1]) receives += op.kind == OpKind::RecvActivation || op.kind == OpKind::RecvGradient;
  EXPECT_EQ(sends, 2);     // activations [1,2) for inputs 0 and 1
  EXPECT_EQ(receives, 2);  // the same two on r1
  EXPECT_EQ(program.pieces.size(), 8u);  // 2 inputs x (2 activation + 2 gradient pieces)
}

TEST(StepProgram, CheckFindsAPieceReceivedTwice) {
  graph::GraphBuilder b("chain");
  b.relu("b", b.relu("a", b.input("input", {1})));
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = hand_plan(graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 1), shard(1, 1, 2)}, {shard(0, 0, 2)}});
  StepProgram program = build_step_program(graph, plan);
  program.pieces.push_back(program.pieces.back());
  EXPECT_THROW(check_step_program(program, graph, plan), UserError);
  program = build_step_program(graph, plan);
  program.pieces[1].tag = program.pieces[3].tag;  // two messages, one tag
  EXPECT_THROW(check_step_program(program, graph, plan), UserError);
}

// Clipping: every rank, those without parameters too, sums the squared norm over the
// world after its gradient waits and before its update. fc2 on r2 alone, the rest on r0, r1.
TEST(StepProgram, ClippingAddsOneWorldNormSumOnEveryRankBeforeTheUpdate) {
  graph::GraphBuilder b("mlp");
  b.cross_entropy("loss", b.linear("fc2", b.relu("relu", b.linear("fc1", b.input("input", {8}), 4)), 2));
  const graph::Graph graph = std::move(b).build();
  using plan::testing::shard;
  const std::vector<cost::Shard> two{shard(0, 0, 4), shard(1, 4, 8)};
  const std::vector<cost::Shard> alone{shard(2, 0, 8)};
  const plan::Plan plan = plan::testing::hand_plan(graph, 3, 8, {two, two, two, alone, alone});
  ProgramOptions clipping;
  clipping.clip_grad_norm = 1.0;
  const StepProgram program = build_step_program(graph, plan, clipping);
  check_step_program(program, graph, plan);
  EXPECT_EQ(program.groups, (std::vector<std::vector<int>>{{0, 1}, {0, 1, 2}}));
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<OpKind> ops = kinds(program, rank);
    const auto clip = std::find(ops.begin(), ops.end(), OpKind::ClipGradNorm);
    ASSERT_NE(clip, ops.end()) << rank;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), OpKind::ClipGradNorm), 1) << rank;
    EXPECT_EQ(*(clip + 1), OpKind::Update) << rank;  // every rank here has parameters
    const Op& op = program.ops[static_cast<size_t>(rank)][static_cast<size_t>(clip - ops.begin())];
    EXPECT_EQ(op.group, 1);
    EXPECT_EQ(op.bytes, 8);
  }
  for (const int rank : {0, 1}) {  // fc1's bucket, then the norm
    const std::vector<OpKind> ops = kinds(program, rank);
    EXPECT_EQ(*(std::find(ops.begin(), ops.end(), OpKind::ClipGradNorm) - 1), OpKind::WaitAllReduce) << rank;
  }
  // One rank has nothing to sum with: the op stays (the norm is still taken), with no group.
  const StepProgram alone_program = build_step_program(graph, plan::plan_data_parallel(graph, 1, 8), clipping);
  EXPECT_TRUE(alone_program.groups.empty());
  const std::vector<OpKind> alone_ops = kinds(alone_program, 0);
  const auto alone_clip = std::find(alone_ops.begin(), alone_ops.end(), OpKind::ClipGradNorm);
  ASSERT_NE(alone_clip, alone_ops.end());
  EXPECT_EQ(alone_program.ops[0][static_cast<size_t>(alone_clip - alone_ops.begin())].group, -1);
  for (const double clip : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ProgramOptions bad;
    bad.clip_grad_norm = clip;
    EXPECT_THROW(build_step_program(graph, plan, bad), UserError) << clip;
  }
}

TEST(StepProgram, RefusesBucketSizesThatAreNotPositive) {
  graph::GraphBuilder b("one");
  b.relu("a", b.input("input", {1}));
  const graph::Graph graph = std::move(b).build();
  const plan::Plan plan = plan::plan_data_parallel(graph, 1, 1);
  for (const double bytes : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ProgramOptions options;
    options.bucket_bytes = bytes;
    EXPECT_THROW(build_step_program(graph, plan, options), UserError) << bytes;
  }
}

}  // namespace
}  // namespace burst::program
