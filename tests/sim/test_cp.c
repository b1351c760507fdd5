/* Context parallelism and expert load (workloads/wl_tf_cp.c, sim/strategies/cp.c): the load-balanced
 * chunks, the ring's attention blocks, FLOPs, the bytes exchanged and held, a ring step's
 * exposure and the busiest expert's load, each against a hand calculation. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "comm_net.h"
#include "cp.h"
#include "wl_transformer.h"

static wl_tf tf_of(const char *name)
{
  wl_tf tf;
  g_autoptr(GError) error = NULL;
  assert_true(wl_tf_parse(name, &tf, &error));
  return tf;
}

/* cp 4: 8 chunks; rank 0 holds 0 and 7, rank 3 holds 3 and 4. Causal pairs in halves of a
 * chunk's square: chunk c makes 2c + 1, so rank r makes (2r + 1) + (2 (7 - r) + 1) = 16 =
 * 4 cp for every r, and the four ranks 64 = 8^2, the whole causal triangle of 8 x 8 chunks
 * (64 halves = 32 squares = 8 x 8 / 2). */
static void test_chunks_balance(void **state)
{
  (void)state;
  uint32_t c[2];
  wl_tf_cp_chunks(4, 0, c);
  assert_int_equal(c[0], 0);
  assert_int_equal(c[1], 7);
  wl_tf_cp_chunks(4, 3, c);
  assert_int_equal(c[0], 3);
  assert_int_equal(c[1], 4);
  uint64_t total = 0;
  for (uint32_t r = 0; r < 4; r++) {
    assert_int_equal(wl_tf_cp_causal_halves(4, r), 16);
    total += wl_tf_cp_causal_halves(4, r);
  }
  assert_int_equal(total, 64);
}

/* s 8192, cp 4: a rank holds 2048 tokens. Step 0: 2048 x 2048 causal; rank 2 at step 1 gets
 * rank 1's keys (lower): both query chunks against its first key chunk, 2048 x 1024; rank 1
 * at step 3 gets rank 2's (higher): the second query chunk against both, 1024 x 2048. A rank's
 * pairs over the steps: 2048^2 / 2 + 3 x 2048 x 1024 = 8,388,608 = 8192^2 / 2 / 4. */
static void test_ring_steps(void **state)
{
  (void)state;
  wl_tf_cp_block b = wl_tf_cp_step(8192, 4, 0, 0);
  assert_int_equal(b.q, 2048);
  assert_int_equal(b.k, 2048);
  assert_true(b.causal);
  b = wl_tf_cp_step(8192, 4, 2, 1);
  assert_int_equal(b.q, 2048);
  assert_int_equal(b.k, 1024);
  assert_false(b.causal);
  b = wl_tf_cp_step(8192, 4, 1, 3);
  assert_int_equal(b.q, 1024);
  assert_int_equal(b.k, 2048);
  assert_false(b.causal);
  for (uint32_t r = 0; r < 4; r++) {
    uint64_t pairs = 0;
    for (uint32_t i = 0; i < 4; i++) {
      b = wl_tf_cp_step(8192, 4, r, i);
      pairs += b.causal ? b.q * b.k / 2 : b.q * b.k;
    }
    assert_int_equal(pairs, UINT64_C(8388608));
  }
}

/* Llama 2 7B (h 4096, 32 heads of 128): causal flash attention forward is 2 x 2 s^2 h / 2 =
 * 2 s^2 h per block and sequence: at s = 32768, 8,796,093,022,208 FLOPs; over cp 2 a rank
 * runs half, and its block kernel (its 16384 queries against 32768 keys, half of them masked)
 * the same 4,398,046,511,104. At 1M tokens without context parallelism the kernel runs
 * 8192 x 8193 / 2 of the 8192^2 tiles: (n + 1) / 2n of the matrix against the mask's 1/2. */
static void test_cp_flops(void **state)
{
  (void)state;
  wl_tf tf = tf_of("llama2-7b");
  uint64_t s = 32768, h = 4096;
  assert_int_equal(wl_tf_layer_attention_flops(&tf, 1, s), 2 * s * s * h);
  assert_int_equal(wl_tf_cp_attention_flops(&tf, 1, s, 2), s * s * h);
  wl_tf_shard sh = {.micro_batch = 1, .seq = (uint32_t)s, .tp = 1, .precision = WL_PREC_BF16,
                    .cp = 2};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_block_kernels(&tf, &sh, 0, k);
  uint64_t attn = 0;
  for (size_t i = 0; i < n; i++)
    if (k[i].pass[0].kind == WL_OP_ATTENTION)
      attn = k[i].pass[0].flops;
  assert_int_equal(attn, s * s * h);
  wl_tf_kernel big;
  uint64_t m = UINT64_C(1048576), tiles = m / 128;
  wl_tf_attention_kernel(&tf, &(wl_tf_shard){.micro_batch = 1, .seq = (uint32_t)m, .tp = 1,
                                             .precision = WL_PREC_BF16},
                         m, m, 1, TRUE, &big);
  /* 2 x 32 heads x pairs x (128 + 128). */
  uint64_t pairs = m * m * (tiles + 1) / (2 * tiles);
  assert_int_equal(big.pass[0].flops, 2 * 32 * pairs * 256);
  assert_int_equal(big.pass[1].flops, big.pass[0].flops * 5 / 2);
}

/* Bytes at tp 2, cp 2, one sequence of 32768 bf16 tokens of Llama 2 7B: a rank's keys and
 * values are 16384 tokens x 32 heads x (128 + 128) / 2 x 2 bytes = 134,217,728; its queries
 * and outputs half that each. p2p holds 4 x kv; all-gather 2 cp x kv (4 x at cp 2, 16 x at
 * cp 8 with 4096 tokens a rank); a2a twice the rank's own q, k, v and output. The a2a volume
 * of one forward all-to-all: q + kv = 201,326,592. */
static void test_cp_bytes(void **state)
{
  (void)state;
  wl_tf tf = tf_of("llama2-7b");
  wl_tf_shard sh = {.micro_batch = 1, .seq = 32768, .tp = 2, .precision = WL_PREC_BF16,
                    .cp = 2};
  assert_int_equal(wl_tf_cp_kv_bytes(&tf, &sh), UINT64_C(134217728));
  assert_int_equal(wl_tf_cp_q_bytes(&tf, &sh), UINT64_C(67108864));
  assert_int_equal(wl_tf_cp_o_bytes(&tf, &sh), UINT64_C(67108864));
  assert_int_equal(wl_tf_cp_q_bytes(&tf, &sh) + wl_tf_cp_kv_bytes(&tf, &sh), UINT64_C(201326592));
  assert_int_equal(wl_tf_cp_buffer_bytes(&tf, &sh, WL_CP_P2P), 4 * UINT64_C(134217728));
  assert_int_equal(wl_tf_cp_buffer_bytes(&tf, &sh, WL_CP_A2A),
                   2 * (UINT64_C(134217728) + 2 * UINT64_C(67108864)));
  sh.cp = 8;
  /* 4096 tokens: kv 33,554,432; all-gather 16 x. */
  assert_int_equal(wl_tf_cp_buffer_bytes(&tf, &sh, WL_CP_ALLGATHER), 16 * UINT64_C(33554432));
  sh.cp = 1;
  assert_int_equal(wl_tf_cp_buffer_bytes(&tf, &sh, WL_CP_P2P), 0);
}

/* Activations over cp: every term of a block's selective-recomputation activations is linear
 * in the tokens, so s / cp tokens keep 1 / cp of them. By hand for Llama 2 7B at t 1 in bf16
 * (Korthikanti et al.'s count with flash attention): outside the tensor-parallel regions 10 s h
 * (two norm inputs, QKV and MLP inputs, two 1-byte dropout masks); inside Q, K, V 6 s h, the
 * projection's input 2 s h, SwiGLU's gate and up 4 s f and its output 2 s f: 4096 tokens x
 * (18 x 4096 + 6 x 11008) = 572,522,496 bytes. */
static void test_activations_over_cp(void **state)
{
  (void)state;
  wl_tf tf = tf_of("llama2-7b");
  uint64_t s = 32768;
  uint64_t whole = wl_tf_layer_activation_bytes(&tf, s, 1, 1, FALSE, WL_RECOMPUTE_SELECTIVE,
                                                WL_PREC_BF16);
  for (uint64_t cp = 2; cp <= 8; cp *= 2)
    assert_int_equal(wl_tf_layer_activation_bytes(&tf, s / cp, 1, 1, FALSE,
                                                  WL_RECOMPUTE_SELECTIVE, WL_PREC_BF16) * cp,
                     whole);
  assert_int_equal(wl_tf_layer_activation_bytes(&tf, 4096, 1, 1, FALSE, WL_RECOMPUTE_SELECTIVE,
                                                WL_PREC_BF16),
                   UINT64_C(4096) * (18 * 4096 + 6 * 11008));
}

/* A ring step lasts the longer of its transfer and its block. */
static void test_ring_step_exposure(void **state)
{
  (void)state;
  assert_int_equal(sim_cp_ring_step_ps(3000, 5000), 5000);
  assert_int_equal(sim_cp_ring_step_ps(7000, 5000), 7000);
  assert_int_equal(sim_cp_ring_step_ps(0, 0), 0);
}

/* The p2p ring on one DGX H100 node and on two, timed by sim/strategies/cp.c on the flow network. */
typedef struct {
  comm_topology *topo;
  dev_device *dev;
  sim_coll_timer *ct;
} ring_env;

static void ring_env_open(ring_env *r, uint32_t nodes)
{
  g_autoptr(GError) e = NULL;
  comm_cluster_spec spec = {.system = "dgx-h100", .nodes = nodes};
  r->topo = comm_topology_build(&spec, &e);
  r->dev = r->topo ? dev_device_load("h100-sxm5-80gb", NULL, &e) : NULL;
  r->ct = r->dev ? sim_coll_timer_new(r->topo, COMM_NET_FLOW, "ring", 1e12, &e) : NULL;
  if (!r->ct)
    fail_msg("%s", e->message);
}

static void ring_env_close(ring_env *r)
{
  sim_coll_timer_free(r->ct);
  dev_device_free(r->dev);
  comm_topology_free(r->topo);
}

/* Llama 2 7B at 65536 tokens over cp 8 in one node: a step's block (8192 x 4096 pairs, 32 heads
 * of 128: 5.5e11 FLOPs, about 0.9 ms) outlasts its keys and values on NVLink (8192 tokens x 32
 * x 256 x 2 bytes = 134 MB, about 0.4 ms), backward too (twice the bytes, 2.5 x the FLOPs): the
 * forward exposes nothing and the backward exactly the one step of gradients going home; the
 * exchange is 7 steps forward, 2 x 7 + 1 backward. Over cp 16 on two nodes at 8192 tokens a
 * block of 512 x 256 pairs and its merge take tens of microseconds and a step's 8.4 MB crosses
 * the network in about 0.2 ms: every step after the first costs its transfer, so the forward
 * lasts the first block and its merge plus the 15 transfers. */
static void test_ring_exposure(void **state)
{
  (void)state;
  wl_tf tf = tf_of("llama2-7b");
  ring_env r;
  ring_env_open(&r, 1);
  wl_tf_shard sh = {.micro_batch = 1, .seq = 65536, .tp = 1, .precision = WL_PREC_BF16, .cp = 8};
  sim_cp_attention a;
  g_autoptr(GError) e = NULL;
  assert_true(sim_cp_attention_time(r.dev, r.ct, &tf, &sh, WL_CP_P2P, &a, &e));
  int64_t step = a.comm_ps[0] / 7;
  assert_true(step > 0);
  assert_int_equal(a.comm_ps[0], 7 * step);
  assert_int_equal(a.comm_ps[1], 15 * step);
  assert_int_equal(a.exposed_ps[0], 0);
  assert_int_equal(a.exposed_ps[1], step);
  ring_env_close(&r);

  ring_env_open(&r, 2);
  sh.seq = 8192;
  sh.cp = 16;
  assert_true(sim_cp_attention_time(r.dev, r.ct, &tf, &sh, WL_CP_P2P, &a, &e));
  int64_t c0[2];
  sim_cp_step_ps(r.dev, &tf, &sh, 0, 0, c0);
  assert_true(a.comm_ps[0] / 15 > 4 * c0[0]);
  /* The first step's block with its merge (sim_cp_step_ps), then the transfers. */
  assert_int_equal(a.compute_ps[0] + a.exposed_ps[0], c0[0] + a.comm_ps[0]);
  ring_env_close(&r);
}

/* Loads spread over [2 - X, X]: X 1.4, C 1.0: the busiest runs 1.0, dropped (0.4)^2 /
 * (4 x 0.4) = 0.1; X 1.5, C 1.25: 0.25^2 / 2 = 0.03125; X 1 (even), C 0.8: every expert over
 * capacity, 0.2 dropped; C 0.5 below 2 - X = 0.6 at X 1.4: 0.5 dropped; dropless: X, none. */
static void test_expert_load(void **state)
{
  (void)state;
  static const struct {
    double imbalance, capacity, load, dropped;
  } cases[] = {{1.4, 1.0, 1.0, 0.1},  {1.5, 1.25, 1.25, 0.03125}, {1.0, 0.8, 0.8, 0.2},
               {1.4, 0.5, 0.5, 0.5},  {1.3, 0, 1.3, 0},           {1.3, 2.0, 1.3, 0}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    double d;
    assert_float_equal(wl_tf_expert_load(cases[i].imbalance, cases[i].capacity, &d),
                       cases[i].load, 1e-12);
    assert_float_equal(d, cases[i].dropped, 1e-12);
  }
}

/* A ring step's merge on an H100 SXM5 (3350 GB/s x 0.80 = 2.68e12 B/s, 6 us launch), llama2-7b
 * (32 heads and 32 key/value heads of 128), one 8192-token sequence on cp 4: the rank's 2048
 * tokens' output is 2048 x 32 x 128 x 2 = 16,777,216 bytes, its keys and values twice that.
 * Forward 3 x 16,777,216 = 50,331,648 bytes: 18.780 us + 6 = 24.780 us; backward 3 x 16,777,216
 * + 5 x 33,554,432 = 218,103,808 bytes: 81.382 us + 6 = 87.382 us. */
static void test_merge_step(void **state)
{
  (void)state;
  g_autoptr(GError) e = NULL;
  g_autoptr(dev_device) dev = dev_device_load("h100-sxm5-80gb", NULL, &e);
  assert_non_null(dev);
  wl_tf tf = tf_of("llama2-7b");
  wl_tf_shard sh = {.micro_batch = 1, .seq = 8192, .tp = 1, .cp = 4, .precision = WL_PREC_BF16};
  int64_t f = sim_cp_merge_ps(dev, &tf, &sh, 0), b = sim_cp_merge_ps(dev, &tf, &sh, 1);
  if (llabs(f - 24780466) > 10 || llabs(b - 87382018) > 10)
    fail_msg("merge %" PRId64 " / %" PRId64 " ps", f, b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chunks_balance),     cmocka_unit_test(test_ring_steps),
      cmocka_unit_test(test_cp_flops),           cmocka_unit_test(test_cp_bytes),
      cmocka_unit_test(test_activations_over_cp), cmocka_unit_test(test_ring_step_exposure),
      cmocka_unit_test(test_expert_load),        cmocka_unit_test(test_ring_exposure),
      cmocka_unit_test(test_merge_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
