/* FSDP's per-block gathers and reductions (sim/fsdp.c) on hand-worked timelines, the framework
 * files' formulas (workloads/wl_framework.c), HSDP's sharded state and ZeRO-Offload's host
 * figures against closed forms. */
#include "fsdp.h"
#include "framework_keys.h"
#include "wl_framework.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

/* Runs a graph on the engine alone (only compute tasks) and returns the makespan, ps. */
static sim_time_ps run_graph(sim_graph *g)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  g_autoptr(GError) err = NULL;
  assert_true(sim_exec_run(x, &err));
  return sim_exec_makespan(x);
}

/* One pass of n blocks of compute c each, gathers of a each, reductions of r each. */
static sim_time_ps pass_time(uint32_t n, sim_time_ps c, sim_time_ps a, sim_time_ps r,
                             uint32_t prefetch)
{
  sim_graph *g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id compute = sim_graph_add_stream(g, u, "compute");
  sim_stream_id dp = sim_graph_add_stream(g, u, "dp");
  sim_task_id pieces[16];
  for (uint32_t j = 0; j < n; j++) {
    pieces[j] = sim_graph_add_compute(g, compute, "block", "forward", c, 0, 0);
    if (j > 0)
      sim_graph_depend(g, pieces[j], pieces[j - 1]);
  }
  sim_fsdp_pass x = {.comm = dp, .pieces = pieces, .n = n, .gather_ps = a, .reduce_ps = r,
                     .prefetch = prefetch, .chunk = 0};
  sim__fsdp_add_pass(g, &x);
  sim_time_ps t = run_graph(g);
  sim_graph_free(g);
  return t;
}

/* Gathers slower than compute (a = 15, c = 10, 4 blocks, one block ahead): g0 0-15, g1 15-30
 * and c0 15-25, g2 30-45 (after c0 and g1) and c1 30-40, g3 45-60 and c2 45-55, c3 60-70. The
 * exposed gather time is a + (n - 1)(a - c) = 15 + 45 - 30 = 30: the pass ends at 70. */
static void test_gather_bound(void **state)
{
  (void)state;
  assert_int_equal(pass_time(4, 10, 15, 0, 1), 70);
}

/* Gathers faster than compute (a = 4, c = 10): only the first is exposed, 4 + 4 x 10 = 44. */
static void test_gather_hidden(void **state)
{
  (void)state;
  assert_int_equal(pass_time(4, 10, 4, 0, 1), 44);
}

/* Prefetch 0 (gather j only once block j - 1 is done): every gather is exposed,
 * 4 x (4 + 10) = 56. */
static void test_no_prefetch(void **state)
{
  (void)state;
  assert_int_equal(pass_time(4, 10, 4, 0, 0), 56);
}

/* Backward with gathers (a = 4) and reductions (r = 8) on one stream, c = 10, 3 blocks: g0 0-4,
 * g1 4-8; c0 4-14; then g2 (waits c0) 14-18, r0 18-26; c1 14-24; c2 needs g2 (18): 24-34;
 * r1 after c1 and r0: 26-34; r2 after c2: 34-42. The last reduction ends at 42. */
static void test_backward_reductions(void **state)
{
  (void)state;
  assert_int_equal(pass_time(3, 10, 4, 8, 1), 42);
}

/* HSDP's collectives: 16 data-parallel ranks of 2 tensor ranks (ranks d x 2 + r), sharded over
 * groups of 8. A 1e9-byte reduce-scatter is one within each sharding group (8 ranks 2 apart,
 * the 2 tensor ranks' groups at once) and an allreduce of the 1e9 / 8 = 125e6-byte shard
 * across the 2 replicas (ranks 16 apart, 16 such pairs at once); a gather stays within the
 * group; plain ZeRO (G = D) and allreduces are one collective over all 16. With one tensor
 * rank the two sharding groups are 8 apart and run together. */
static void test_hsdp_steps(void **state)
{
  (void)state;
  sim_dp_step st[2];
  assert_int_equal(sim__dp_steps(COMM_COLL_REDUCE_SCATTER, 16, 2, 8, 1000000000, st), 2);
  assert_int_equal(st[0].op, COMM_COLL_REDUCE_SCATTER);
  assert_int_equal(st[0].n, 8);
  assert_int_equal(st[0].stride, 2);
  assert_int_equal(st[0].groups, 2);
  assert_int_equal(st[0].group_stride, 1);
  assert_int_equal(st[0].bytes, 1000000000);
  assert_int_equal(st[1].op, COMM_COLL_ALLREDUCE);
  assert_int_equal(st[1].n, 2);
  assert_int_equal(st[1].stride, 16);
  assert_int_equal(st[1].groups, 16);
  assert_int_equal(st[1].bytes, 125000000);
  assert_int_equal(sim__dp_steps(COMM_COLL_ALLGATHER, 16, 2, 8, 1000, st), 1);
  assert_int_equal(st[0].n, 8);
  assert_int_equal(sim__dp_steps(COMM_COLL_REDUCE_SCATTER, 16, 2, 16, 1000, st), 1);
  assert_int_equal(st[0].n, 16);
  assert_int_equal(sim__dp_steps(COMM_COLL_ALLREDUCE, 16, 2, 8, 1000, st), 1);
  assert_int_equal(st[0].n, 16);
  assert_int_equal(sim__dp_steps(COMM_COLL_ALLGATHER, 16, 1, 8, 1000, st), 1);
  assert_int_equal(st[0].groups, 2);
  assert_int_equal(st[0].group_stride, 8);
}

/* ZeRO-Offload's host step: 10e9 parameters on one device of a node with DeepSpeed's CPU-Adam
 * rate (3.89e9 parameters/s for the node): 2.5707 s; with 16 devices sharing the node's CPUs,
 * 625e6 parameters each take as long. PCIe: 20e9 bytes at 12.6e9 bytes/s (PCIe 3.0 x16 at 0.8
 * of 15.75e9) take 1.5873 s. */
static void test_offload_times(void **state)
{
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(wl_framework) fw = wl_framework_load("deepspeed", "--framework", &err);
  assert_non_null(fw);
  assert_float_equal(wl_framework_host_step_s(fw, 10000000000, 1), 10e9 / 3.89e9, 1e-9);
  assert_float_equal(wl_framework_host_step_s(fw, 625000000, 16), 10e9 / 3.89e9, 1e-9);
  assert_float_equal(sim__pcie_s(20000000000, 15.75e9 * 0.8), 20e9 / 12.6e9, 1e-9);
}

/* Offloaded memory: 1e9 parameters sharded over G = 8 with ZeRO 2: the host keeps the shard's
 * 12 bytes of optimizer state and a 4-byte fp32 gradient copy, 2e9 bytes; the device keeps no
 * optimizer state, and no gradients when they are offloaded too. */
static void test_offload_memory(void **state)
{
  (void)state;
  sim_3d_metrics m = {.optimizer_bytes = 1500000000, .gradients_bytes = 250000000};
  sim__3d_offload_memory(SIM_OFFLOAD_OPTIMIZER, 1000000000, 8, 2, &m);
  assert_int_equal(m.host_bytes, 1500000000 + 125000000 * 4);
  assert_int_equal(m.optimizer_bytes, 0);
  assert_int_equal(m.gradients_bytes, 250000000);
  sim__3d_offload_memory(SIM_OFFLOAD_GRADIENTS, 1000000000, 8, 2, &m);
  assert_int_equal(m.gradients_bytes, 0);
}

/* An eager framework's norm moves norm_bytes_factor times the bytes (15.2 in fsdp.ini); the
 * rotary embedding is a kernel of its own reading and writing queries and keys 11.8 times:
 * llama3-8b, one sequence of 8192 tokens: (32 + 8) heads x 128 x 8192 x 2 bytes x 11.8; with
 * context parallelism, of the rank's tokens only. */
static void test_eager_kernels(void **state)
{
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(wl_framework) fw = wl_framework_load("fsdp", "--framework", &err);
  assert_non_null(fw);
  wl_tf tf;
  assert_true(wl_tf_parse("llama3-8b", &tf, &err));
  wl_tf_shard sh = {.micro_batch = 1, .seq = 8192, .tp = 1, .precision = WL_PREC_BF16};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_block_kernels(&tf, &sh, 0, k);
  uint64_t norm_read = k[0].pass[0].bytes_read;
  assert_string_equal(k[0].name, "norm1");
  size_t m = wl_framework_kernels(fw, &tf, &sh, TRUE, k, n);
  assert_int_equal(m, n + 1);
  assert_int_equal(k[0].pass[0].bytes_read, (uint64_t)((double)norm_read * 15.2));
  assert_string_equal(k[n].name, "rope");
  assert_int_equal(k[n].pass[0].bytes_read, (uint64_t)(40.0 * 128 * 8192 * 2 * 11.8));
  /* With context parallelism 4 the rank embeds its 8192 / 4 = 2048 tokens' queries and keys. */
  sh.cp = 4;
  n = wl_tf_block_kernels(&tf, &sh, 0, k);
  m = wl_framework_kernels(fw, &tf, &sh, TRUE, k, n);
  assert_string_equal(k[m - 1].name, "rope");
  assert_int_equal(k[m - 1].pass[0].bytes_read, (uint64_t)(40.0 * 128 * 2048 * 2 * 11.8));
}

/* A framework file with a bad value is refused naming the file, line and key. */
static void test_bad_file(void **state)
{
  (void)state;
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("fw-XXXXXX.ini", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  assert_true(g_file_set_contents(path, "[framework]\ndescription = x\n[overlap]\n"
                                        "gather = sometimes\n", -1, NULL));
  g_autoptr(GError) err = NULL;
  g_autoptr(wl_framework) fw = wl_framework_load(path, "--framework", &err);
  assert_null(fw);
  assert_non_null(strstr(err->message, ":4: [overlap] gather"));
  g_unlink(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gather_bound),        cmocka_unit_test(test_gather_hidden),
      cmocka_unit_test(test_no_prefetch),         cmocka_unit_test(test_backward_reductions),
      cmocka_unit_test(test_offload_times),       cmocka_unit_test(test_offload_memory),
      cmocka_unit_test(test_eager_kernels),       cmocka_unit_test(test_bad_file),
      cmocka_unit_test(test_hsdp_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
