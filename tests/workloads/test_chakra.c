/* Tests of the Chakra execution trace reader (workloads/wl_chakra.c) on files written by the
 * writer (traces/chakra_out.c): every field read back as written, the dependency order, the
 * process groups, and one message per kind of bad file. The expected values are the ones
 * written, converted by hand (microseconds to picoseconds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "chakra_out.h"
#include "util.h"
#include "wl_chakra.h"

#include <glib/gstdio.h>

typedef struct {
  char *dir;
  trace_chakra_out *w;
} folder;

static void folder_open(folder *f)
{
  g_autoptr(GError) e = NULL;
  f->dir = g_dir_make_tmp("chakra-XXXXXX", &e);
  assert_non_null(f->dir);
  f->w = trace_chakra_out_new(f->dir, "t", "test", &e);
  assert_non_null(f->w);
}

static void folder_rm(folder *f)
{
  g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
  for (const char *n; d && (n = g_dir_read_name(d));) {
    g_autofree char *p = g_build_filename(f->dir, n, NULL);
    g_unlink(p);
  }
  g_rmdir(f->dir);
  g_free(f->dir);
  trace_chakra_out_free(f->w);
}

static void begin(folder *f, uint32_t rank)
{
  g_autoptr(GError) e = NULL;
  assert_true(trace_chakra_out_begin(f->w, rank, &e));
}

static void node(folder *f, const trace_chakra_node *n)
{
  g_autoptr(GError) e = NULL;
  assert_true(trace_chakra_out_node(f->w, n, &e));
}

static void end(folder *f)
{
  g_autoptr(GError) e = NULL;
  assert_true(trace_chakra_out_end(f->w, &e));
}

static void close_all(folder *f)
{
  g_autoptr(GError) e = NULL;
  assert_true(trace_chakra_out_close(f->w, &e));
}

/* Loads the folder expecting failure; the message must contain `want`. */
static void expect_error(folder *f, const char *want)
{
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_chakra_trace) t = wl_chakra_load(f->dir, "--chakra", &e);
  assert_null(t);
  assert_non_null(e);
  assert_int_equal(e->code, DT_ERROR_INPUT);
  if (!strstr(e->message, want))
    fail_msg("'%s' does not say '%s'", e->message, want);
}

static void test_fields(void **state)
{
  (void)state;
  folder f;
  folder_open(&f);
  uint32_t both[2] = {0, 1};
  trace_chakra_out_group(f.w, "pair", both, 2);
  for (uint32_t r = 0; r < 2; r++) {
    begin(&f, r);
    /* Written out of dependency order: node 7 (the compute) waits for node 9 (the receive on
     * rank 1, the send on rank 0). */
    uint64_t nine = 9, seven = 7;
    trace_chakra_node c = {.id = 7, .name = "gemm", .type = WL_CHAKRA_COMP,
                           .duration_micros = 250, .num_ops = 1000000, .tensor_size = 4096,
                           .stream = 3, .data_deps = &nine, .n_data_deps = 1};
    trace_chakra_node p = {.id = 9, .name = r ? "recv" : "send",
                           .type = r ? WL_CHAKRA_RECV : WL_CHAKRA_SEND, .stream = -1,
                           .comm_src = 0, .comm_dst = 1, .comm_tag = 5, .comm_size = 65536};
    trace_chakra_node a = {.id = 11, .name = "ar", .type = WL_CHAKRA_COLL, .stream = -1,
                           .comm_type = WL_CHAKRA_REDUCE_SCATTER, .comm_size = 1 << 20,
                           .pg_name = "pair", .ctrl_deps = &seven, .n_ctrl_deps = 1};
    node(&f, &c);
    node(&f, &p);
    node(&f, &a);
    end(&f);
  }
  close_all(&f);
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_chakra_trace) t = wl_chakra_load(f.dir, "--chakra", &e);
  assert_non_null(t);
  assert_int_equal(t->n_ranks, 2);
  assert_int_equal(t->n_nodes, 6);
  assert_int_equal(t->groups->len, 1);
  const wl_chakra_group *g = g_ptr_array_index(t->groups, 0);
  assert_string_equal(g->name, "pair");
  assert_int_equal(g->n, 2);
  for (uint32_t r = 0; r < 2; r++) {
    const wl_chakra_rank *rk = &t->ranks[r];
    assert_int_equal(rk->n_nodes, 3);
    const wl_chakra_node *c = &rk->nodes[0], *p = &rk->nodes[1], *a = &rk->nodes[2];
    assert_int_equal(c->type, WL_CHAKRA_COMP);
    assert_int_equal(c->duration_ps, 250 * UINT64_C(1000000));   /* 250 us */
    assert_int_equal(c->flops, 1000000);
    assert_int_equal(c->bytes, 4096);
    assert_int_equal(c->stream, 3);
    assert_int_equal(c->n_deps, 1);
    assert_int_equal(rk->deps[c->first_dep], 1);   /* node 9 is the second in the file */
    assert_int_equal(p->type, r ? WL_CHAKRA_RECV : WL_CHAKRA_SEND);
    assert_int_equal(p->peer, r ? 0 : 1);
    assert_int_equal(p->tag, 5);
    assert_int_equal(p->bytes, 65536);
    assert_int_equal(a->type, WL_CHAKRA_COLL);
    assert_int_equal(a->comm, WL_CHAKRA_REDUCE_SCATTER);
    assert_int_equal(a->bytes, 1 << 20);
    assert_int_equal(a->group, 0);
    assert_int_equal(a->n_deps, 1);   /* the control dependency */
    /* Dependency order, file order among the free: the send, the compute, the collective. */
    assert_int_equal(rk->order[0], 1);
    assert_int_equal(rk->order[1], 0);
    assert_int_equal(rk->order[2], 2);
  }
  folder_rm(&f);
}

/* One rank of two nodes where the second is `bad`. */
static void one_bad(const trace_chakra_node *bad, const char *want)
{
  folder f;
  folder_open(&f);
  begin(&f, 0);
  trace_chakra_node ok = {.id = 1, .name = "fine", .type = WL_CHAKRA_COMP,
                          .duration_micros = 1, .stream = -1};
  node(&f, &ok);
  node(&f, bad);
  end(&f);
  close_all(&f);
  expect_error(&f, want);
  folder_rm(&f);
}

static void test_bad_nodes(void **state)
{
  (void)state;
  uint64_t two = 2, missing = 77;
  trace_chakra_node dup = {.id = 1, .name = "again", .type = WL_CHAKRA_COMP, .stream = -1};
  one_bad(&dup, "node 1 (again): a second node with this id");
  trace_chakra_node invalid = {.id = 2, .name = "x", .type = 0, .stream = -1};
  one_bad(&invalid, "node 2 (x): type 0 is not a node type");
  trace_chakra_node self = {.id = 2, .name = "self", .type = WL_CHAKRA_COMP, .stream = -1,
                            .data_deps = &two, .n_data_deps = 1};
  one_bad(&self, "node 2 (self): depends on itself");
  trace_chakra_node lost = {.id = 2, .name = "lost", .type = WL_CHAKRA_COMP, .stream = -1,
                            .ctrl_deps = &missing, .n_ctrl_deps = 1};
  one_bad(&lost, "node 2 (lost): depends on node 77, which is not in the file");
  trace_chakra_node ct = {.id = 2, .name = "ct", .type = WL_CHAKRA_COLL, .stream = -1,
                          .comm_type = 12, .comm_size = 8};
  one_bad(&ct, "node 2 (ct): comm_type 12 is not a collective");
  trace_chakra_node pg = {.id = 2, .name = "pg", .type = WL_CHAKRA_COLL, .stream = -1,
                          .comm_type = WL_CHAKRA_ALL_REDUCE, .comm_size = 8, .pg_name = "9"};
  /* comm_group.json exists (empty: the writer always writes it) and has no group "9". */
  one_bad(&pg, "node 2 (pg): process group \"9\" is not in comm_group.json");
}

static void test_cycle(void **state)
{
  (void)state;
  folder f;
  folder_open(&f);
  begin(&f, 0);
  uint64_t a = 1, b = 2, c = 3;
  /* 1 <- 3 <- 2 <- 1: a cycle of three; node 4 waits behind it. */
  trace_chakra_node n1 = {.id = 1, .name = "one", .type = WL_CHAKRA_COMP, .stream = -1,
                          .data_deps = &c, .n_data_deps = 1};
  trace_chakra_node n2 = {.id = 2, .name = "two", .type = WL_CHAKRA_COMP, .stream = -1,
                          .data_deps = &a, .n_data_deps = 1};
  trace_chakra_node n3 = {.id = 3, .name = "three", .type = WL_CHAKRA_COMP, .stream = -1,
                          .data_deps = &b, .n_data_deps = 1};
  node(&f, &n1);
  node(&f, &n2);
  node(&f, &n3);
  end(&f);
  close_all(&f);
  expect_error(&f, "t.0.et: node 1 (one): its dependencies form a cycle (through node 3)");
  folder_rm(&f);
}

/* Raw bytes as a rank's file. */
static void raw(const char *bytes, gsize len, const char *want)
{
  folder f;
  folder_open(&f);
  g_autofree char *p = g_build_filename(f.dir, "t.0.et", NULL);
  assert_true(g_file_set_contents(p, bytes, (gssize)len, NULL));
  expect_error(&f, want);
  folder_rm(&f);
}

static void test_bad_files(void **state)
{
  (void)state;
  raw("", 0, "empty: no global metadata");
  raw("\x05\x0a\x01", 3, "truncated: the global metadata at byte 0 needs 5 bytes, the file has 2");
  raw("\x80", 1, "truncated: the length of the global metadata at byte 0 is cut off");
  /* 2^24 + 1 bytes claimed: one more than a message may have. */
  raw("\x81\x80\x80\x08", 4, "claims 16777217 bytes");
  raw("\x1f\x8b\x08\x00", 4, "a gzip file");
  /* A metadata message of one byte 0xff: a field header with no valid wire type. */
  raw("\x01\xff", 2, "not a Chakra execution trace");
  /* A good empty metadata, then a node whose bytes are not a Node. */
  raw("\x00\x02\xff\xff", 4, "the message at byte 1 (after node 0) is not a Chakra node");
}

static void test_groups(void **state)
{
  (void)state;
  folder f;
  folder_open(&f);
  uint32_t twice[2] = {1, 1};
  trace_chakra_out_group(f.w, "g", twice, 2);
  for (uint32_t r = 0; r < 2; r++) {
    begin(&f, r);
    end(&f);
  }
  close_all(&f);
  expect_error(&f, "comm_group.json: group \"g\" names rank 1 twice");
  folder_rm(&f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields),    cmocka_unit_test(test_bad_nodes),
      cmocka_unit_test(test_cycle),     cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_groups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
