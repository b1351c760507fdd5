/* Tests of workloads/: published parameter counts and multiply-adds of the zoo, hand-computed
 * costs of every layer type's passes on small shapes, the first-layer and no-free-layer rules,
 * optimizer and memory accounting, the JSON round trip, the Paleo importer, and bad files.
 * Every expected number is worked out in the comment beside it, not taken from the program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"
#include "wl_internal.h"
#include "workloads.h"
#include "wl_transformer.h"

#include <math.h>

static const char *data_path(const char *name)
{
  static char buf[1024];
  g_snprintf(buf, sizeof(buf), "%s/data/%s", DTSIM_TEST_DIR, name);
  return buf;
}

static wl_net *zoo_net(const char *name, wl_model **model)
{
  g_autoptr(GError) e = NULL;
  *model = wl_model_load(name, &e);
  assert_non_null(*model);
  wl_net *net = wl_net_new(*model, 1, WL_PREC_FP32, &e);
  assert_non_null(net);
  return net;
}

/* ---- Variables as frameworks create them ------------------------------------------------- */

/* ResNet-50 as tf_cnn_benchmarks builds it has 161 trainable variables: 53 convolution kernels
 * without bias, beta and gamma of each of the 53 batch norms, and the classifier's kernel and
 * bias (53 + 106 + 2). The second variables: one vector per batch norm, as long as its
 * convolution's output channels (64 + 3 x (64 + 64 + 256) + 256 + 4 x (128 + 128 + 512) + 512
 * + 6 x (256 + 256 + 1024) + 1024 + 3 x (512 + 512 + 2048) + 2048 = 26560 in all, the
 * downsampling convolutions counted once per stage), and the classifier's 1000 biases. */
static void test_second_variables(void **state)
{
  wl_model *m;
  wl_net *net = zoo_net("resnet50", &m);
  uint64_t variables = 0, second = 0;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *l = wl_net_layer(net, i);
    uint64_t s = wl_layer_second_params(l);
    assert_true(s < l->params || l->params == 0);
    variables += (l->params > 0) + (s > 0);
    second += s;
  }
  assert_int_equal(variables, 161);
  assert_int_equal(second, 26560 + 1000);
  wl_net_free(net);
  wl_model_free(m);
}

/* ---- Zoo: torchvision's published parameter counts --------------------------------------- */

static void test_param_counts(void **state)
{
  static const struct {
    const char *name;
    uint64_t params;
  } expect[] = {
      {"lenet5", 61706},          {"alexnet", 61100840},     {"alexnet_owt", 50303912},
      {"vgg16", 138357544},       {"vgg19", 143667240},      {"resnet18", 11689512},
      {"resnet34", 21797672},     {"resnet50", 25557032},    {"resnet101", 44549160},
      {"resnet152", 60192808},    {"googlenet", 6624904},    {"inception_v3", 23834568},
      /* v1 moves a stride, not a weight. */
      {"resnet50-v1", 25557032},  {"resnet101-v1", 44549160}, {"resnet152-v1", 60192808},
      /* vgg11: torchvision's published count. */
      {"vgg11", 132863336},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
    wl_model *m;
    g_autoptr(wl_net) net = zoo_net(expect[i].name, &m);
    wl_totals t;
    wl_net_totals(net, &t);
    if (t.params != expect[i].params)
      fail_msg("%s: %" G_GUINT64_FORMAT " parameters, published %" G_GUINT64_FORMAT,
               expect[i].name, t.params, expect[i].params);
    wl_model_free(m);
  }
}

/* The CHAOS networks, counted by hand from the layer table (weights + one bias per map):
 * small: conv 1->5 4x4 = 5*16+5 = 85; conv 5->10 5x5 = 10*125+10 = 1260; fc 90->50 = 4550;
 *        fc 50->10 = 510; total 6405.
 * medium: 20*16+20 = 340; 40*20*25+40 = 20040; 360*150+150 = 54150; 1510; total 76040.
 * large: 340; 60*20*4+60 = 4860; 100*60*9+100 = 54100; 400*150+150 = 60150; 1510;
 *        total 120960. */
static void test_chaos_counts(void **state)
{
  static const struct {
    const char *name;
    uint64_t params;
  } expect[] = {{"chaos-small", 6405}, {"chaos-medium", 76040}, {"chaos-large", 120960}};
  for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
    wl_model *m;
    g_autoptr(wl_net) net = zoo_net(expect[i].name, &m);
    wl_totals t;
    wl_net_totals(net, &t);
    assert_int_equal(t.params, expect[i].params);
    wl_model_free(m);
  }
}

/* Forward multiply-adds at batch 1 within 2% of the published figures (torchvision's GFLOPS
 * column, which counts multiply-adds). */
static void test_forward_macs(void **state)
{
  static const struct {
    const char *name;
    double gmacs;
  } expect[] = {{"alexnet", 0.71},      {"vgg16", 15.47},     {"googlenet", 1.50},
                {"inception_v3", 5.71}, {"resnet50", 4.09},   {"resnet101", 7.80},
                {"resnet152", 11.51}};
  for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
    wl_model *m;
    g_autoptr(wl_net) net = zoo_net(expect[i].name, &m);
    wl_totals t;
    wl_net_totals(net, &t);
    double g = t.macs / 1e9, rel = (g - expect[i].gmacs) / expect[i].gmacs;
    if (rel > 0.02 || rel < -0.02)
      fail_msg("%s: %.4f G multiply-adds, published %.2f G", expect[i].name, g, expect[i].gmacs);
    wl_model_free(m);
  }
}

/* ResNet v1 against v1.5: He et al. 2015 (arXiv:1512.03385, Table 1) count 3.8, 7.6 and 11.3 G
 * multiply-adds for the 50-, 101- and 152-layer nets (within 2%). By hand, the difference is
 * the first 1x1 of each stage's first block (stages 2-4), which v1.5 runs at twice the side:
 * stage 2 56x56 x 256 -> 128, stage 3 28x28 x 512 -> 256, stage 4 14x14 x 1024 -> 512, each
 * 102,760,448 multiply-adds at the full side and a quarter of that at the reduced one, so
 * 3 x 3/4 x 102,760,448 = 231,211,008 per image for every depth; the 3x3 that follows has the
 * same output either way. */
static void test_resnet_v1(void **state)
{
  static const struct {
    const char *v15, *v1;
    double published_gmacs;
  } expect[] = {{"resnet50", "resnet50-v1", 3.8},
                {"resnet101", "resnet101-v1", 7.6},
                {"resnet152", "resnet152-v1", 11.3}};
  for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
    wl_model *a, *b;
    g_autoptr(wl_net) na = zoo_net(expect[i].v15, &a);
    g_autoptr(wl_net) nb = zoo_net(expect[i].v1, &b);
    wl_totals ta, tb;
    wl_net_totals(na, &ta);
    wl_net_totals(nb, &tb);
    assert_int_equal(ta.macs - tb.macs, UINT64_C(231211008));
    double rel = (tb.macs / 1e9 - expect[i].published_gmacs) / expect[i].published_gmacs;
    if (rel > 0.02 || rel < -0.02)
      fail_msg("%s: %.4f G multiply-adds, published %.1f G", expect[i].v1, tb.macs / 1e9,
               expect[i].published_gmacs);
    wl_model_free(a);
    wl_model_free(b);
  }
}

/* ---- Rules over the whole zoo ---------------------------------------------------------------- */

static void test_zoo_rules(void **state)
{
  size_t n;
  const wl_zoo_entry *zoo = wl_zoo(&n);
  assert_int_equal(n, 21);
  for (size_t z = 0; z < n; z++) {
    g_autoptr(wl_model) m = zoo[z].build();
    g_autoptr(GError) e = NULL;
    g_autoptr(wl_net) net = wl_net_new(m, 4, WL_PREC_FP16, &e);
    assert_non_null(net);
    for (size_t i = 0; i < wl_net_n_layers(net); i++) {
      const wl_layer *L = wl_net_layer(net, i);
      /* Topological order. */
      for (int j = 0; j < L->n_parents; j++)
        assert_true(L->parents[j] < (int)i);
      /* The first layer computes no data gradient; layers with parameters compute weight
       * gradients. */
      if (i == 0)
        assert_false(L->has_pass[WL_PASS_BACKWARD_DATA]);
      assert_int_equal(L->has_pass[WL_PASS_BACKWARD_WEIGHTS], L->params > 0);
      /* No pass that runs is free: it moves bytes, and compute layers do arithmetic. */
      for (int p = 0; p < WL_PASS_COUNT; p++) {
        if (!L->has_pass[p])
          continue;
        const wl_op_cost *c = &L->cost[p];
        if (c->bytes_read == 0 || c->bytes_written == 0 || c->out_elems == 0)
          fail_msg("%s: layer %s pass %s moves no bytes", zoo[z].name, L->name, wl_pass_name(p));
        if (c->flops == 0 && L->kind != WL_LAYER_CONCAT && L->kind != WL_LAYER_FLATTEN &&
            !(L->kind == WL_LAYER_ADD && p == WL_PASS_BACKWARD_DATA))
          fail_msg("%s: layer %s pass %s costs no FLOPs", zoo[z].name, L->name, wl_pass_name(p));
        assert_int_equal(c->pass, p);
      }
      if (L->kind == WL_LAYER_CONV || L->kind == WL_LAYER_FC)
        assert_true(L->cost[WL_PASS_FORWARD].gemm_m > 0 && L->cost[WL_PASS_FORWARD].kernel_h > 0);
    }
  }
}

/* ---- Hand-computed costs per layer type ------------------------------------------------------ */

/* A model with input C x H x W whose first layer is a 1x1 convolution (so everything after it
 * computes data gradients) followed by the layer under test. */
static wl_model *probe(uint32_t c, uint32_t h, uint32_t w, wl_layer_kind kind,
                       const wl_hparams *hp)
{
  wl_model *m = wl_model_new("probe", c, h, w);
  wl_hparams one = wl_hparams_default();
  one.out = c;
  int x = wl_model_add(m, "pre", WL_LAYER_CONV, &one, (int[]){-1}, 1);
  x = wl_model_add(m, "test", kind, hp, &x, 1);
  wl_model_add(m, "loss", WL_LAYER_SOFTMAX, NULL, &x, 1);
  g_autoptr(GError) e = NULL;
  assert_true(wl_model_finish(m, &e));
  return m;
}

static void assert_cost(const wl_op_cost *c, uint64_t flops, uint64_t rd, uint64_t wr)
{
  if (c->flops != flops || c->bytes_read != rd || c->bytes_written != wr)
    fail_msg("pass %s: flops %" G_GUINT64_FORMAT " read %" G_GUINT64_FORMAT
             " written %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
             " %" G_GUINT64_FORMAT,
             wl_pass_name(c->pass), c->flops, c->bytes_read, c->bytes_written, flops, rd, wr);
}

static void test_valid_taps(void **state)
{
  uint32_t pad;
  /* in 5, kernel 3, stride 1, pad 1: output 5; taps inside per output row 2,3,3,3,2 = 13. */
  assert_int_equal(wl__out_size(5, 3, 1, 1, 1, FALSE, FALSE, &pad), 5);
  assert_int_equal(wl__valid_taps(5, 5, 3, 1, 1, 1), 13);
  /* in 5, kernel 3, stride 2, pad 1: output (5+2-3)/2+1 = 3; rows -1..1, 1..3, 3..5: 2+3+2. */
  assert_int_equal(wl__out_size(5, 3, 2, 1, 1, FALSE, FALSE, &pad), 3);
  assert_int_equal(wl__valid_taps(5, 3, 3, 2, 1, 1), 7);
  /* Dilation 2, kernel 3 (span 5), in 5, pad 2: output 5; output p reads rows p-2, p, p+2:
   * p=0: 0,2 (2); p=1: 1,3 (2); p=2: 0,2,4 (3); p=3: 1,3 (2); p=4: 2,4 (2) = 11. */
  assert_int_equal(wl__out_size(5, 3, 1, 2, 2, FALSE, FALSE, &pad), 5);
  assert_int_equal(wl__valid_taps(5, 5, 3, 1, 2, 2), 11);
  /* TensorFlow SAME, in 224, kernel 7, stride 2: output 112, total padding 111*2+7-224 = 5,
   * 2 before. */
  assert_int_equal(wl__out_size(224, 7, 2, 0, 1, TRUE, FALSE, &pad), 112);
  assert_int_equal(pad, 2);
  /* PyTorch ceil_mode: in 112, kernel 3, stride 2: (109/2 rounded up) + 1 = 56. */
  assert_int_equal(wl__out_size(112, 3, 2, 0, 1, FALSE, TRUE, &pad), 56);
  /* A 5x5 kernel does not fit a 4x4 input. */
  assert_int_equal(wl__out_size(4, 5, 1, 0, 1, FALSE, FALSE, &pad), 0);
}

static void test_conv_costs(void **state)
{
  /* Batch 2, input 2x5x5, 3 filters 3x3, stride 1, pad 1, bias: output 3x5x5.
   * Forward: 2*3*25 outputs x 2*9 taps = 2700 MACs = 5400 FLOPs + 150 bias adds = 5550.
   * Reads x 2*2*25*4 = 400 B and 3*2*9+3 = 57 params * 4 = 228 B; writes 2*3*25*4 = 600 B.
   * Backward taps inside the input: 13 per dimension (test_valid_taps) = 169 per (k, c) pair:
   * backward-data 2 * N*K*C * 169 = 2*2*3*2*169 = 4056 FLOPs, reads dy 600 + w 228, writes
   * dx 400; backward-weights 4056 + 150 (bias) FLOPs, reads dy 600 + x 400, writes 228. */
  wl_hparams hp = wl_hparams_default();
  hp.out = 3, hp.kh = hp.kw = 3, hp.ph = hp.pw = 1;
  g_autoptr(wl_model) m = probe(2, 5, 5, WL_LAYER_CONV, &hp);
  g_autoptr(wl_net) net = wl_net_new(m, 2, WL_PREC_FP32, NULL);
  const wl_layer *L = wl_net_layer(net, 1);
  assert_string_equal(L->name, "test");
  assert_int_equal(L->params, 57);
  assert_int_equal(L->macs, 2700);
  assert_cost(&L->cost[WL_PASS_FORWARD], 5550, 628, 600);
  assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], 4056, 828, 400);
  assert_cost(&L->cost[WL_PASS_BACKWARD_WEIGHTS], 4206, 1000, 228);
  /* Implicit GEMMs: forward m = N*P*Q = 50, n = K = 3, k = C*R*S = 18; data m = N*H*W = 50,
   * n = C = 2, k = K*R*S = 27; weights m = K = 3, n = C*R*S = 18, k = N*P*Q = 50. */
  const wl_op_cost *f = &L->cost[WL_PASS_FORWARD], *d = &L->cost[WL_PASS_BACKWARD_DATA],
                   *w = &L->cost[WL_PASS_BACKWARD_WEIGHTS];
  assert_true(f->gemm_m == 50 && f->gemm_n == 3 && f->gemm_k == 18 && f->gemm_batch == 1);
  assert_true(d->gemm_m == 50 && d->gemm_n == 2 && d->gemm_k == 27);
  assert_true(w->gemm_m == 3 && w->gemm_n == 18 && w->gemm_k == 50);
  assert_true(f->kernel_h == 3 && f->kernel_w == 3 && f->stride == 1 && f->out_elems == 150);
  /* The first layer (1x1, 2->2, bias: 6 params) computes no data gradient. */
  const wl_layer *pre = wl_net_layer(net, 0);
  assert_false(pre->has_pass[WL_PASS_BACKWARD_DATA]);
  assert_int_equal(pre->cost[WL_PASS_BACKWARD_DATA].flops, 0);
  assert_true(pre->has_pass[WL_PASS_BACKWARD_WEIGHTS]);
  /* Its weight gradient: N*K*P*Q*C = 2*2*25*2 = 200 MACs = 400 FLOPs + 100 bias adds. */
  assert_int_equal(pre->cost[WL_PASS_BACKWARD_WEIGHTS].flops, 500);
}

static void test_grouped_strided_conv(void **state)
{
  /* Batch 1, input 4x5x5, 4 filters 3x3, stride 2, pad 1, 2 groups, no bias: output 4x3x3,
   * 4*2*9 = 72 params. Forward 36 outputs x 2 channels x 9 taps = 648 MACs = 1296 FLOPs.
   * Backward: 7 taps per dimension inside the input = 49; 2 * N*K*(C/G) * 49 = 2*4*2*49 =
   * 784 FLOPs each pass. GEMMs are per group: forward m 9, n 2, k 18, batch 2. */
  wl_hparams hp = wl_hparams_default();
  hp.out = 4, hp.kh = hp.kw = 3, hp.sh = hp.sw = 2, hp.ph = hp.pw = 1, hp.groups = 2;
  hp.bias = FALSE;
  g_autoptr(wl_model) m = probe(4, 5, 5, WL_LAYER_CONV, &hp);
  g_autoptr(wl_net) net = wl_net_new(m, 1, WL_PREC_FP32, NULL);
  const wl_layer *L = wl_net_layer(net, 1);
  assert_int_equal(L->out_h, 3);
  assert_int_equal(L->params, 72);
  assert_int_equal(L->cost[WL_PASS_FORWARD].flops, 1296);
  assert_int_equal(L->cost[WL_PASS_BACKWARD_DATA].flops, 784);
  assert_int_equal(L->cost[WL_PASS_BACKWARD_WEIGHTS].flops, 784);
  const wl_op_cost *f = &L->cost[WL_PASS_FORWARD];
  assert_true(f->gemm_m == 9 && f->gemm_n == 2 && f->gemm_k == 18 && f->gemm_batch == 2);
  assert_int_equal(f->stride, 2);
}

static void test_fc_costs(void **state)
{
  /* Batch 4, input 10x1x1, 3 outputs with bias: 33 params. Forward 4*10*3 = 120 MACs = 240
   * + 12 bias = 252 FLOPs; reads 40*4 + 33*4 = 292 B, writes 12*4 = 48 B. Backward-data
   * 240 FLOPs, reads 48 + 132, writes 160; backward-weights 240 + 12, reads 48 + 160, writes
   * 132. At fp16 every activation element is 2 bytes and gradients are 2 bytes. */
  wl_hparams hp = wl_hparams_default();
  hp.out = 3;
  g_autoptr(wl_model) m = probe(10, 1, 1, WL_LAYER_FC, &hp);
  g_autoptr(wl_net) net = wl_net_new(m, 4, WL_PREC_FP32, NULL);
  const wl_layer *L = wl_net_layer(net, 1);
  assert_cost(&L->cost[WL_PASS_FORWARD], 252, 292, 48);
  assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], 240, 180, 160);
  assert_cost(&L->cost[WL_PASS_BACKWARD_WEIGHTS], 252, 208, 132);
  const wl_op_cost *w = &L->cost[WL_PASS_BACKWARD_WEIGHTS];
  assert_true(w->gemm_m == 3 && w->gemm_n == 10 && w->gemm_k == 4);
  g_autoptr(wl_net) half = wl_net_new(m, 4, WL_PREC_FP16, NULL);
  L = wl_net_layer(half, 1);
  assert_cost(&L->cost[WL_PASS_FORWARD], 252, 146, 24);
  assert_cost(&L->cost[WL_PASS_BACKWARD_WEIGHTS], 252, 104, 66);
}

static void test_pool_costs(void **state)
{
  /* Max 2x2/2 on 1x4x4, batch 1: 4 outputs. Forward one comparison per window element = 16,
   * reads 64 B, writes 16 B. Backward-data one accumulation per output = 4; reads x 64 + y 16
   * + dy 16 = 96, writes dx 64. */
  wl_hparams hp = wl_hparams_default();
  hp.kh = hp.kw = hp.sh = hp.sw = 2;
  g_autoptr(wl_model) m = probe(1, 4, 4, WL_LAYER_MAXPOOL, &hp);
  g_autoptr(wl_net) net = wl_net_new(m, 1, WL_PREC_FP32, NULL);
  const wl_layer *L = wl_net_layer(net, 1);
  assert_cost(&L->cost[WL_PASS_FORWARD], 16, 64, 16);
  assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], 4, 96, 64);
  assert_false(L->has_pass[WL_PASS_BACKWARD_WEIGHTS]);
  /* Average 3x3/1 pad 1 on 1x3x3: 9 outputs; forward 9*9 = 81; backward 9*(9+1) = 90, reads
   * dy 36, writes dx 36. */
  wl_hparams av = wl_hparams_default();
  av.kh = av.kw = 3, av.ph = av.pw = 1;
  g_autoptr(wl_model) m2 = probe(1, 3, 3, WL_LAYER_AVGPOOL, &av);
  g_autoptr(wl_net) n2 = wl_net_new(m2, 1, WL_PREC_FP32, NULL);
  L = wl_net_layer(n2, 1);
  assert_cost(&L->cost[WL_PASS_FORWARD], 81, 36, 36);
  assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], 90, 36, 36);
  /* Global average of 2x3x3: 2 outputs; forward 2*9 = 18, backward 2*10 = 20. */
  g_autoptr(wl_model) m3 = probe(2, 3, 3, WL_LAYER_GLOBALPOOL, NULL);
  g_autoptr(wl_net) n3 = wl_net_new(m3, 1, WL_PREC_FP32, NULL);
  L = wl_net_layer(n3, 1);
  assert_cost(&L->cost[WL_PASS_FORWARD], 18, 72, 8);
  assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], 20, 8, 72);
}

static void test_elementwise_costs(void **state)
{
  /* 2x2x2 input, batch 2: 16 elements, 64 B at fp32. */
  struct {
    wl_layer_kind kind;
    uint64_t f_flops, f_rd, f_wr, b_flops, b_rd, b_wr;
  } cases[] = {
      /* relu: 1 per element each way; backward reads y and dy. */
      {WL_LAYER_RELU, 16, 64, 64, 16, 128, 64},
      /* sigmoid: 4 forward (negate, exp, add, reciprocal), 3 backward. */
      {WL_LAYER_SIGMOID, 64, 64, 64, 48, 128, 64},
      {WL_LAYER_TANH, 64, 64, 64, 48, 128, 64},
      /* dropout: 3 forward, writes y and a 1-byte mask (16 B); backward 2, reads dy + mask. */
      {WL_LAYER_DROPOUT, 48, 64, 80, 32, 80, 64},
      /* flatten: a copy each way. */
      {WL_LAYER_FLATTEN, 0, 64, 64, 0, 64, 64},
      /* batch norm, 2 channels (4 params): forward 8 per element, two reads of x + 16 B of
       * params, writes y + 2 channels x (mean, inverse deviation) fp32 = 16 B; backward-data
       * 10 per element, reads x and dy twice (256 B) + params 16 B, writes 64 B. */
      {WL_LAYER_BATCHNORM, 128, 144, 80, 160, 272, 64},
      /* LRN size 5: forward 2*5+4 = 14 per element, writes y and scale; backward 5+7 = 12,
       * reads x, y, scale, dy. */
      {WL_LAYER_LRN, 224, 64, 128, 192, 256, 64},
      /* softmax with loss: 5 per element + 2 per sample; backward 1 per element + 1 per
       * sample. */
      {WL_LAYER_SOFTMAX, 84, 64, 64, 18, 64, 64},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(wl_model) m = probe(2, 2, 2, cases[i].kind, NULL);
    g_autoptr(wl_net) net = wl_net_new(m, 2, WL_PREC_FP32, NULL);
    const wl_layer *L = wl_net_layer(net, 1);
    assert_cost(&L->cost[WL_PASS_FORWARD], cases[i].f_flops, cases[i].f_rd, cases[i].f_wr);
    assert_cost(&L->cost[WL_PASS_BACKWARD_DATA], cases[i].b_flops, cases[i].b_rd, cases[i].b_wr);
  }
  /* Batch norm's weight gradient: 3 per element = 48; reads x and dy 128 B; writes 4 params
   * x 4 B. */
  g_autoptr(wl_model) m = probe(2, 2, 2, WL_LAYER_BATCHNORM, NULL);
  g_autoptr(wl_net) net = wl_net_new(m, 2, WL_PREC_FP32, NULL);
  assert_cost(&wl_net_layer(net, 1)->cost[WL_PASS_BACKWARD_WEIGHTS], 48, 128, 16);
}

static void test_joins(void **state)
{
  /* input 2x2x2 -> pre (1x1 conv) -> a (relu) -> {b (relu), c (relu)} -> add(b, c) and
   * concat(b, c), both into a final add. Batch 1: 8 elements, 32 B.
   * add of two parents: forward 8 adds, reads 64 B, writes 32 B; backward copies dy to one
   * parent: reads 32, writes 32. a has two children: its backward sums 2 gradients (8 adds,
   * reads 64, writes 32) on top of its relu backward (8 FLOPs, reads 64, writes 32).
   * concat(b, c): 4x2x2, forward reads 64, writes 64. */
  wl_model *m = wl_model_new("joins", 2, 2, 2);
  wl_hparams one = wl_hparams_default();
  one.out = 2;
  int pre = wl_model_add(m, "pre", WL_LAYER_CONV, &one, (int[]){-1}, 1);
  int a = wl_model_add(m, "a", WL_LAYER_RELU, NULL, &pre, 1);
  int b = wl_model_add(m, "b", WL_LAYER_RELU, NULL, &a, 1);
  int c = wl_model_add(m, "c", WL_LAYER_RELU, NULL, &a, 1);
  int s = wl_model_add(m, "sum", WL_LAYER_ADD, NULL, (int[]){b, c}, 2);
  int k = wl_model_add(m, "cat", WL_LAYER_CONCAT, NULL, (int[]){b, c}, 2);
  int f = wl_model_add(m, "flat_cat", WL_LAYER_FLATTEN, NULL, &k, 1);
  int g = wl_model_add(m, "flat_sum", WL_LAYER_FLATTEN, NULL, &s, 1);
  int fc = wl_model_add(m, "fc", WL_LAYER_FC, &(wl_hparams){.out = 2, .bias = TRUE}, &f, 1);
  int fc2 = wl_model_add(m, "fc2", WL_LAYER_FC, &(wl_hparams){.out = 2, .bias = TRUE}, &g, 1);
  int t = wl_model_add(m, "total", WL_LAYER_ADD, NULL, (int[]){fc, fc2}, 2);
  wl_model_add(m, "loss", WL_LAYER_SOFTMAX, NULL, &t, 1);
  g_autoptr(wl_model) owned = m;
  g_autoptr(GError) e = NULL;
  assert_true(wl_model_finish(m, &e));
  g_autoptr(wl_net) net = wl_net_new(m, 1, WL_PREC_FP32, NULL);
  assert_cost(&wl_net_layer(net, (size_t)s)->cost[WL_PASS_FORWARD], 8, 64, 32);
  assert_cost(&wl_net_layer(net, (size_t)s)->cost[WL_PASS_BACKWARD_DATA], 0, 32, 32);
  assert_cost(&wl_net_layer(net, (size_t)a)->cost[WL_PASS_BACKWARD_DATA], 16, 128, 64);
  const wl_layer *cat = wl_net_layer(net, (size_t)k);
  assert_int_equal(cat->out_c, 4);
  assert_cost(&cat->cost[WL_PASS_FORWARD], 0, 64, 64);
  /* b and c each feed two layers. */
  assert_int_equal(wl_net_layer(net, (size_t)b)->n_children, 2);
}

static void test_update_and_memory(void **state)
{
  /* resnet50, P = 25,557,032 parameters. SGD with momentum: 4 FLOPs per parameter; reads w,
   * g, v (12 B), writes w, v (8 B) at fp32. Adam: 14 FLOPs; reads w, g, m, v (16 B), writes
   * w, m, v (12 B). Memory at fp32 with Adam: weights 4P, gradients 4P, state 8P. At fp16:
   * weights 2P + 4P master, gradients 2P. */
  const uint64_t P = 25557032;
  wl_model *m;
  g_autoptr(wl_net) net = zoo_net("resnet50", &m);
  g_autoptr(wl_model) owned = m;
  uint64_t flops = 0, rd = 0, wr = 0;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    wl_op_cost c;
    wl_net_update_cost(net, i, WL_OPT_ADAM, &c);
    flops += c.flops, rd += c.bytes_read, wr += c.bytes_written;
    assert_int_equal(wl_net_layer(net, i)->cost[WL_PASS_UPDATE].flops,
                     4 * wl_net_layer(net, i)->params);
  }
  assert_int_equal(flops, 14 * P);
  assert_int_equal(rd, 16 * P);
  assert_int_equal(wr, 12 * P);
  wl_memory mem;
  wl_net_memory(net, WL_OPT_ADAM, &mem);
  assert_int_equal(mem.weights_bytes, 4 * P);
  assert_int_equal(mem.gradients_bytes, 4 * P);
  assert_int_equal(mem.optimizer_bytes, 8 * P);
  assert_true(mem.activations_bytes > 0 && mem.workspace_bytes > 0);
  assert_int_equal(mem.total_bytes, mem.weights_bytes + mem.gradients_bytes +
                                        mem.optimizer_bytes + mem.activations_bytes +
                                        mem.workspace_bytes);
  g_autoptr(wl_net) half = wl_net_new(m, 1, WL_PREC_FP16, NULL);
  wl_net_memory(half, WL_OPT_SGD_MOMENTUM, &mem);
  assert_int_equal(mem.weights_bytes, 6 * P);
  assert_int_equal(mem.gradients_bytes, 2 * P);
  assert_int_equal(mem.optimizer_bytes, 4 * P);
  /* Input batch copy: 3*224*224 elements of 2 bytes per sample. */
  assert_int_equal(wl_net_input_bytes_per_sample(half), 3 * 224 * 224 * 2);
}

static void test_lenet_activations(void **state)
{
  /* lenet5, batch 1, fp32. Saved for backward: relu outputs conv1/relu 6*28*28 = 4704 and
   * conv2/relu 16*10*10 = 1600 elements (read by their own backward and by the pools); pool
   * outputs pool1 6*14*14 = 1176 (max pool reads y; conv2 reads it) and pool2 400; flatten
   * 400 (read by fc1); fc1/relu 120; fc2/relu 84; softmax 10. Total 8494 elements = 33976 B.
   * The convolutions' and fc layers' outputs are not read by any backward (relu reads its
   * own output). */
  wl_model *m;
  g_autoptr(wl_net) net = zoo_net("lenet5", &m);
  g_autoptr(wl_model) owned = m;
  wl_totals t;
  wl_net_totals(net, &t);
  assert_int_equal(t.saved_bytes, 33976);
}

static void test_sum_range(void **state)
{
  wl_model *m;
  g_autoptr(wl_net) net = zoo_net("alexnet", &m);
  g_autoptr(wl_model) owned = m;
  uint64_t f = 0;
  for (size_t i = 2; i <= 7; i++)
    f += wl_net_layer(net, i)->cost[WL_PASS_FORWARD].flops;
  wl_op_cost sum;
  wl_net_sum_range(net, 2, 7, WL_PASS_FORWARD, &sum);
  assert_int_equal(sum.flops, f);
  assert_int_equal(sum.kind, WL_OP_CONV);
}

/* ---- File formats ------------------------------------------------------------------------- */

static void assert_same_costs(const wl_net *a, const wl_net *b)
{
  assert_int_equal(wl_net_n_layers(a), wl_net_n_layers(b));
  for (size_t i = 0; i < wl_net_n_layers(a); i++) {
    const wl_layer *x = wl_net_layer(a, i), *y = wl_net_layer(b, i);
    assert_string_equal(x->name, y->name);
    assert_int_equal(x->params, y->params);
    assert_int_equal(x->saved_bytes, y->saved_bytes);
    assert_memory_equal(x->cost, y->cost, sizeof(x->cost));
  }
}

static void test_json_round_trip(void **state)
{
  size_t n;
  const wl_zoo_entry *zoo = wl_zoo(&n);
  for (size_t z = 0; z < n; z++) {
    g_autoptr(wl_model) m = zoo[z].build();
    g_autofree char *text = wl_model_to_json(m);
    g_autoptr(GError) e = NULL;
    g_autoptr(wl_model) back = wl_model_load_data("export.json", text, strlen(text), &e);
    if (back == NULL)
      fail_msg("%s: %s", zoo[z].name, e->message);
    assert_string_equal(wl_model_name(back), zoo[z].name);
    g_autoptr(wl_net) a = wl_net_new(m, 8, WL_PREC_AMP, NULL);
    g_autoptr(wl_net) b = wl_net_new(back, 8, WL_PREC_AMP, NULL);
    assert_same_costs(a, b);
  }
}

static void test_paleo_import(void **state)
{
  /* The one-tower AlexNet in Paleo's layout (fc layers as convolutions, with bias) has the
   * same parameters and multiply-adds as the zoo's alexnet_owt. */
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_model) p = wl_model_load(data_path("paleo_alex_owt.json"), &e);
  if (p == NULL)
    fail_msg("%s", e->message);
  g_autoptr(wl_model) z = wl_model_load("alexnet_owt", &e);
  g_autoptr(wl_net) pn = wl_net_new(p, 1, WL_PREC_FP32, NULL);
  g_autoptr(wl_net) zn = wl_net_new(z, 1, WL_PREC_FP32, NULL);
  wl_totals pt, zt;
  wl_net_totals(pn, &pt);
  wl_net_totals(zn, &zt);
  assert_int_equal(pt.params, 50303912);
  assert_int_equal(pt.macs, zt.macs);

  /* Blocks: stem 3x3 4->16 with batch norm (576 + 32 params); mix = concat of two 1x1 16->8
   * convolutions (136 each) = 16 channels; res = 3x3 16->16 conv (2320) then a one-parent
   * sum; join = mix + res; fc 16*8*8 -> 10 (10250). Total 576+32+136+136+2320+10250 = 13450. */
  g_autoptr(wl_model) b = wl_model_load(data_path("paleo_blocks.json"), &e);
  if (b == NULL)
    fail_msg("%s", e->message);
  g_autoptr(wl_net) bn = wl_net_new(b, 1, WL_PREC_FP32, NULL);
  wl_totals bt;
  wl_net_totals(bn, &bt);
  assert_int_equal(bt.params, 13450);
  gboolean found = FALSE;
  for (size_t i = 0; i < wl_net_n_layers(bn); i++) {
    const wl_layer *L = wl_net_layer(bn, i);
    if (strcmp(L->name, "mix/concat") == 0) {
      found = TRUE;
      assert_int_equal(L->out_c, 16);
      assert_int_equal(L->n_parents, 2);
    }
    if (strcmp(L->name, "join") == 0)
      assert_int_equal(L->kind, WL_LAYER_ADD);
  }
  assert_true(found);
  /* Round trip through our format keeps the costs. */
  g_autofree char *text = wl_model_to_json(b);
  g_autoptr(wl_model) back = wl_model_load_data("x.json", text, strlen(text), &e);
  assert_non_null(back);
  g_autoptr(wl_net) bb = wl_net_new(back, 1, WL_PREC_FP32, NULL);
  assert_same_costs(bn, bb);
}

static void test_unordered_file(void **state)
{
  /* Layers listed backwards are put in topological order: conv (1->2, 3x3 same, 20 params),
   * pool 2x2 to 2x3x3, flatten 18, fc 18->4 (76 params), loss. */
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_model) m = wl_model_load(data_path("unordered.json"), &e);
  if (m == NULL)
    fail_msg("%s", e->message);
  g_autoptr(wl_net) net = wl_net_new(m, 1, WL_PREC_FP32, NULL);
  static const char *const order[] = {"conv", "pool", "flat", "fc", "loss"};
  assert_int_equal(wl_net_n_layers(net), 5);
  for (size_t i = 0; i < 5; i++)
    assert_string_equal(wl_net_layer(net, i)->name, order[i]);
  assert_int_equal(wl_net_layer(net, 1)->out_h, 3);
  wl_totals t;
  wl_net_totals(net, &t);
  assert_int_equal(t.params, 96);
}

static void expect_bad(const char *file, const char *const *needles)
{
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_model) m = wl_model_load(data_path(file), &e);
  assert_null(m);
  assert_non_null(e);
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  assert_null(strchr(e->message, '\n'));
  assert_non_null(strstr(e->message, file));
  for (int i = 0; needles[i]; i++)
    if (strstr(e->message, needles[i]) == NULL)
      fail_msg("%s: message '%s' lacks '%s'", file, e->message, needles[i]);
}

static void test_bad_files(void **state)
{
  expect_bad("bad_syntax.json", (const char *[]){"bad_syntax.json:5:", NULL});
  expect_bad("bad_type.json", (const char *[]){":6:", "mystery", "capsule", NULL});
  expect_bad("bad_parent.json", (const char *[]){":6:", "loss", "fc9", NULL});
  expect_bad("bad_cycle.json", (const char *[]){"cycle", NULL});
  expect_bad("bad_shape.json", (const char *[]){":7:", "conv2", "5x5", "4x4", NULL});
  expect_bad("paleo_bad_type.json", (const char *[]){":5:", "warp", "SpatialTransformer", NULL});
  expect_bad("paleo_bad_channels.json", (const char *[]){":7:", "conv2", "32", "16", NULL});
  g_autoptr(GError) e = NULL;
  assert_null(wl_model_load("no-such-model", &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(e->message, "resnet50"));
}

/* Strict JSON (RFC 8259): each fault named at its line and column, counted by hand (the column
 * of the first character that cannot be there). The first six are a second value after the
 * first: two documents, or an object or array after a number, a string or a literal (json-glib
 * took them, kept one and leaked the other; found by the workload fuzz harness). Braces and
 * brackets inside strings, and escaped quotes, are not structure. */
static void test_strict_json(void **state)
{
  static const struct {
    const char *text, *where, *what;
  } bad[] = {
      {"{\"format\": \"dtsim-workload\"}{\"layers\": []}", "j.json:1:29:", "one JSON value"},
      {"{\"name\": \"a } ] \\\" {\",\n \"layers\": {}\n}\n\n  [1]\n", "j.json:5:3:",
       "one JSON value"},
      {"[{\"a\": 1}] x", "j.json:1:12:", "one JSON value"},
      {"0{\"layers\": []}", "j.json:1:2:", "one JSON value"},
      {"\"a \\\" b\" [1]", "j.json:1:10:", "one JSON value"},
      {"true\n{}", "j.json:2:1:", "one JSON value"},
      {"{\"a\": 01}", "j.json:1:8:", "',' or '}'"},
      {"{\"a\": 1.}", "j.json:1:9:", "decimal point"},
      {"{\"a\": 2e+}", "j.json:1:10:", "exponent"},
      {"[1,]", "j.json:1:4:", "expected a value"},
      {"{\"a\":1,}", "j.json:1:8:", "member name"},
      {"{\"a\" 1}", "j.json:1:6:", "':'"},
      {"{\n \"a\": \"x\ny\"}", "j.json:2:9:", "control character"},
      {"{\"a\": [1,\n  2", "j.json:2:4:", "ends inside the value"},
      {"{\"a\": \"\\q\"}", "j.json:1:9:", "escape"},
      {"{\"a\": \"\\u12g4\"}", "j.json:1:12:", "hexadecimal"},
      {"{\"a\": tru}", "j.json:1:7:", "expected a value"},
      {"{\"a\": \"abc", "j.json:1:11:", "inside a string"},
      {"", "j.json:1:1:", "expected a value"},
      {"// a comment\n{}", "j.json:1:1:", "comment"},
      {"{\"a\": 1, /* x */ \"b\": 2}", "j.json:1:10:", "comment"},
      {"{'a': 1}", "j.json:1:2:", "single quote"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) e = NULL;
    g_autoptr(wl_model) m = wl_model_load_data("j.json", bad[i].text, strlen(bad[i].text), &e);
    assert_null(m);
    assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
    if (!g_str_has_prefix(e->message, bad[i].where) || !strstr(e->message, "not JSON") ||
        !strstr(e->message, bad[i].what))
      fail_msg("case %zu: '%s' is not '%s ... %s'", i, e->message, bad[i].where, bad[i].what);
  }
  /* Whitespace after the value is fine, and every kind of value, escapes and numbers included,
   * is JSON: these fail on their content. */
  const char *spaces = "{\"name\": \"x\"}\n \t\n";
  g_autoptr(GError) e0 = NULL;
  assert_null(wl_model_load_data("j.json", spaces, strlen(spaces), &e0));
  if (strstr(e0->message, "not JSON"))
    fail_msg("valid JSON refused: %s", e0->message);
  const char *ok = "{\"a\": -0.5e+3, \"b\": [true, false, null, \"\\u00e9\\n\\\"\"], \"c\": {},"
                   " \"d\": [[], 0, 10E2]}\r\n";
  g_autoptr(GError) e = NULL;
  assert_null(wl_model_load_data("j.json", ok, strlen(ok), &e));
  if (strstr(e->message, "not JSON"))
    fail_msg("valid JSON refused: %s", e->message);
  /* A UTF-8 byte order mark before the value is ignored (RFC 8259, 8.1). */
  const char *bom = "\xef\xbb\xbf{\"format\": \"dtsim-workload\", \"input\": [1, 8, 8], \"layers\": "
                    "[{\"name\": \"fc\", \"type\": \"fc\", \"parents\": [\"input\"], "
                    "\"out_features\": 10}]}";
  g_autoptr(GError) e2 = NULL;
  g_autoptr(wl_model) m = wl_model_load_data("bom.json", bom, strlen(bom), &e2);
  assert_non_null(m);
  assert_int_equal(wl_model_n_layers(m), 1);
}

static void test_find_line(void **state)
{
  /* A layer named like a type is found where it is defined (line 3), not where the type is
   * mentioned (line 2). */
  const char *ours = "[\n {\"name\": \"a\", \"type\": \"relu\"},\n {\"name\": \"relu\"}]";
  assert_int_equal(wl__find_line(ours, "relu"), 3);
  assert_int_equal(wl__find_line(ours, "absent"), 0);
}

/* Loads Paleo text that must be refused and checks the message names `where` (FILE:LINE:)
 * and `layer`. */
static void expect_paleo_line(const char *text, const char *where, const char *layer)
{
  g_autoptr(GError) e = NULL;
  g_autoptr(wl_model) m = wl_model_load_data("deep.json", text, strlen(text), &e);
  assert_null(m);
  assert_non_null(e);
  if (!g_str_has_prefix(e->message, where) || strstr(e->message, layer) == NULL)
    fail_msg("message '%s' does not start with '%s' or lacks '%s'", e->message, where, layer);
}

static void test_paleo_lines(void **state)
{
  /* A bad layer deep in a long Paleo file is reported at its own line, counted here: line 1
   * holds the name (whose braces, brackets and escaped quote are not structure), line 2
   * "layers", line 3 the input, and layer i of the chain (i >= 1) line 3 + i. Every block's
   * inner layer is called "x", and "x" and "b1" are also mentioned before the bad one is
   * defined, so a line found by searching for the name alone would be an earlier one. */
  enum { N = 3000 };
  GString *t = g_string_new("{\"name\": \"x \\\"{[ \\\" b1\",\n"
                            " \"layers\": {\n"
                            "  \"data\": {\"parents\": [], \"type\": \"Input\", \"tensor\": [1, 4, 4, 4]}");
  for (int i = 1; i < N; i++)
    g_string_append_printf(t, ",\n  \"b%d\": {\"type\": \"Block\", \"parents\": [\"%s%d\"], "
                           "\"endpoint\": \"x\", \"layers\": {\"x\": {\"parents\": [], "
                           "\"type\": \"Elementwise\"}}}", i, i == 1 ? "data" : "b", i - 1);
  /* Block N spans two lines; its inner "x" (line 3 + N + 1) is of an unknown type. */
  g_string_append_printf(t, ",\n  \"b%d\": {\"type\": \"Block\", \"parents\": [\"b%d\"], "
                         "\"endpoint\": \"x\", \"layers\": {\n   \"x\": {\"parents\": [], "
                         "\"type\": \"Warp\"}}}\n }\n}\n", N, N - 1);
  g_autofree char *where = g_strdup_printf("deep.json:%d:", 3 + N + 1);
  g_autofree char *layer = g_strdup_printf("'b%d/x'", N);
  expect_paleo_line(t->str, where, layer);

  /* A top-level layer: the same chain with plain layers, the last one (line 3 + N) bad. */
  g_string_truncate(t, 0);
  g_string_append(t, "{\"name\": \"c5\",\n \"layers\": {\n"
                     "  \"data\": {\"parents\": [], \"type\": \"Input\", \"tensor\": [1, 4, 4, 4]}");
  for (int i = 1; i <= N; i++)
    g_string_append_printf(t, ",\n  \"c%d\": {\"parents\": [\"%s%d\"], \"type\": \"%s\"}", i,
                           i == 1 ? "data" : "c", i - 1, i == N ? "Warp" : "Elementwise");
  g_string_append(t, "\n }\n}\n");
  g_free(where);
  g_free(layer);
  where = g_strdup_printf("deep.json:%d:", 3 + N);
  layer = g_strdup_printf("'c%d'", N);
  expect_paleo_line(t->str, where, layer);
  g_string_free(t, TRUE);
}

static void test_bad_graph_in_code(void **state)
{
  /* Add of mismatched shapes, concat of mismatched sizes, groups that do not divide. */
  wl_hparams c = wl_hparams_default();
  c.out = 3;
  g_autoptr(wl_model) m = wl_model_new("bad", 2, 4, 4);
  int a = wl_model_add(m, "a", WL_LAYER_CONV, &c, (int[]){-1}, 1);
  wl_model_add(m, "sum", WL_LAYER_ADD, NULL, (int[]){a, -1}, 2);
  g_autoptr(GError) e = NULL;
  assert_false(wl_model_finish(m, &e));
  assert_non_null(strstr(e->message, "sum"));
  g_clear_error(&e);
  g_autoptr(wl_model) g = wl_model_new("groups", 3, 4, 4);
  c.groups = 2;
  wl_model_add(g, "gc", WL_LAYER_CONV, &c, (int[]){-1}, 1);
  assert_false(wl_model_finish(g, &e));
  assert_non_null(strstr(e->message, "groups"));
}

/* ---- Transformers ------------------------------------------------------------------------ */

static wl_tf tf_of(const char *name)
{
  g_autoptr(GError) error = NULL;
  wl_tf tf;
  if (!wl_tf_parse(name, &tf, &error))
    fail_msg("%s", error->message);
  return tf;
}

/* Published parameter counts: GPT-3 175B with vocabulary 51200 174.6 B (Narayanan et al.
 * SC'21 Table 1 lists 175B; 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) with l 96, h 12288,
 * s 2048 gives 174,615,846,912); the Hugging Face configs of Llama 2 7B (6,738,415,616),
 * Llama 3 8B (8,030,261,248), and BERT-large (335,141,888 with the pooler, decoder tied); the
 * Llama 3 paper's 70.6 B and 405.8 B (Meta model cards: 70,553,706,496 and 405,853,388,800). */
static void test_tf_param_counts(void **state)
{
  (void)state;
  wl_tf g = tf_of("gpt3-175b");
  assert_int_equal(wl_tf_params(&g), 174615846912ULL);
  /* Per block 12 h^2 + 13 h. */
  assert_int_equal(wl_tf_layer_params(&g), 12ULL * 12288 * 12288 + 13ULL * 12288);
  wl_tf l7 = tf_of("llama2-7b");
  assert_int_equal(wl_tf_params(&l7), 6738415616ULL);
  wl_tf l8 = tf_of("llama3-8b");
  assert_int_equal(wl_tf_params(&l8), 8030261248ULL);
  wl_tf l70 = tf_of("llama3-70b");
  assert_int_equal(wl_tf_params(&l70), 70553706496ULL);
  wl_tf l405 = tf_of("llama3-405b");
  assert_int_equal(wl_tf_params(&l405), 405853388800ULL);
  wl_tf bert = tf_of("bert-large");
  assert_int_equal(wl_tf_params(&bert), 335141888ULL);
  /* Rounded as published. */
  assert_int_equal((wl_tf_params(&g) + 50000000) / 100000000, 1746);
  assert_int_equal((wl_tf_params(&l7) + 5000000) / 10000000, 674);
  assert_int_equal((wl_tf_params(&bert) + 500000) / 1000000, 335);
  /* The inline spec of the same GPT-3 is the same model. */
  wl_tf spec = tf_of("transformer:layers=96,hidden=12288,heads=96,seq=2048,vocab=51200");
  assert_int_equal(wl_tf_params(&spec), wl_tf_params(&g));
}

/* Narayanan et al. SC'21 eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full
 * recomputation; without it 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Megatron-LM's count). */
/* One multi-token-prediction module, counted by hand for a Llama-style spec with h = 64,
 * 4 heads, ffn 4h = 256, s = 16, V = 128: a block is attention 4 h^2 = 16384, swiglu MLP
 * 3 h 256 = 49152 and two rmsnorms 128, 65664 in all; the module adds its two input norms and
 * final norm (3 x 64) and the projection 2h x h = 8192: 74048. Its forward FLOPs for one
 * sequence: the projection 2 s 2h h = 262144, the block 2 s 65536 = 2097152 plus attention
 * 2 s^2 a (16 + 16) = 65536, the head 2 s h V = 262144: 2686976. With experts (4 of ffn 256,
 * top 1, the first block dense) the module's block is the mixture of experts: router 256,
 * experts 4 x 49152, so 213376, and the module 221760, of which a token uses 74304. */
static void test_tf_mtp(void **state)
{
  (void)state;
  const char *base = "transformer:layers=2,hidden=64,heads=4,seq=16,vocab=128,family=llama";
  g_autofree char *with = g_strconcat(base, ",mtp=1", NULL);
  g_autofree char *two = g_strconcat(base, ",mtp=2", NULL);
  wl_tf t0 = tf_of(base), t1 = tf_of(with), t2 = tf_of(two);
  assert_int_equal(t0.mtp, 0);
  assert_int_equal(wl_tf_mtp_params(&t0), 0);
  assert_int_equal(wl_tf_mtp_params(&t1), 74048);
  assert_int_equal(wl_tf_mtp_params(&t2), 2 * 74048);
  assert_int_equal(wl_tf_params(&t1) - wl_tf_params(&t0), 74048);
  assert_int_equal(wl_tf_active_params(&t1) - wl_tf_active_params(&t0), 74048);
  assert_int_equal(wl_tf_mtp_forward_flops(&t0, 1, 16), 0);
  assert_int_equal(wl_tf_mtp_forward_flops(&t1, 1, 16), 2686976);
  assert_int_equal(wl_tf_mtp_forward_flops(&t2, 3, 16), 2 * 3 * 2686976);
  /* Forward and backward of the module, and with full recomputation its block once more. */
  assert_float_equal(wl_tf_iteration_flops(&t1, 1, 16, WL_RECOMPUTE_NONE) -
                         wl_tf_iteration_flops(&t0, 1, 16, WL_RECOMPUTE_NONE),
                     3.0 * 2686976, 0.5);
  assert_float_equal(wl_tf_iteration_flops(&t1, 1, 16, WL_RECOMPUTE_FULL) -
                         wl_tf_iteration_flops(&t0, 1, 16, WL_RECOMPUTE_FULL),
                     3.0 * 2686976 + 2162688, 0.5);
  /* Its kernels: the embedding gather, two norms, the projection (tokens x h/t x 2h), the
   * final norm, LM head and cross-entropy; on 2 tensor-parallel ranks the projection GEMM is
   * 16 x 32 x 128. */
  wl_tf_shard sh = {.micro_batch = 1, .seq = 16, .tp = 2, .precision = WL_PREC_BF16};
  wl_tf_kernel k[WL_TF_MTP_KERNELS];
  size_t n = wl_tf_mtp_kernels(&t1, &sh, k);
  assert_int_equal(n, 7);
  assert_string_equal(k[3].name, "mtp_projection");
  assert_int_equal(k[3].pass[0].flops, 2 * 16 * 32 * 128);
  assert_int_equal(k[3].pass[1].flops + k[3].pass[2].flops, 2 * 2 * 16 * 32 * 128);
  /* The module's block is the model's last kind. */
  wl_tf moe = tf_of("transformer:layers=2,hidden=64,heads=4,seq=16,vocab=128,family=llama,"
                    "experts=4,topk=1,dense-layers=1,mtp=1");
  assert_int_equal(wl_tf_mtp_params(&moe), 221760);
  wl_tf moe0 = tf_of("transformer:layers=2,hidden=64,heads=4,seq=16,vocab=128,family=llama,"
                     "experts=4,topk=1,dense-layers=1");
  assert_int_equal(wl_tf_active_params(&moe) - wl_tf_active_params(&moe0), 74304);
  /* DeepSeek-V3's published 671 B leaves its module out (report sec. 2.2, 4.2): the zoo's
   * model has none. */
  wl_tf v3 = tf_of("deepseek-v3");
  assert_int_equal(v3.mtp, 0);
  /* Refused, naming the key. */
  static const char *const bad[] = {"mtp=-1", "mtp=x", "mtp=3", "mtp="};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) error = NULL;
    g_autofree char *spec = g_strconcat(base, ",", bad[i], NULL);
    wl_tf tf;
    assert_false(wl_tf_parse(spec, &tf, &error));
    assert_int_equal(error->code, DT_ERROR_INPUT);
    assert_non_null(strstr(error->message, ": mtp: "));
  }
}

static void test_tf_flops_eq3(void **state)
{
  (void)state;
  static const char *const specs[] = {
      "transformer:layers=96,hidden=16384,heads=128,seq=2048,vocab=51200",
      "transformer:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200",
      "transformer:layers=128,hidden=25600,heads=160,seq=2048,vocab=51200",
  };
  static const double B[] = {2160, 512, 3072};
  for (size_t i = 0; i < G_N_ELEMENTS(specs); i++) {
    wl_tf tf = tf_of(specs[i]);
    double s = tf.seq, l = tf.layers, h = tf.hidden, V = tf.vocab;
    double eq3 = 96 * B[i] * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    double got = wl_tf_iteration_flops(&tf, (uint64_t)B[i], tf.seq, WL_RECOMPUTE_FULL);
    assert_true(fabs(got / eq3 - 1) < 1e-12);
    double mlm = 72 * B[i] * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    got = wl_tf_iteration_flops(&tf, (uint64_t)B[i], tf.seq, WL_RECOMPUTE_NONE);
    assert_true(fabs(got / mlm - 1) < 1e-12);
  }
}

/* The kernels of one block on a tensor-parallel rank add up, over the t ranks, to the block's
 * 24 b s h^2 + 4 b s^2 h forward FLOPs (non-causal: the whole score matrix runs). */
static void test_tf_kernels(void **state)
{
  (void)state;
  wl_tf tf = tf_of("transformer:layers=4,hidden=1024,heads=16,seq=512,vocab=1000,causal=0");
  wl_tf_shard sh = {.micro_batch = 2, .seq = 512, .tp = 4, .precision = WL_PREC_FP16};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_layer_kernels(&tf, &sh, k);
  uint64_t matmul = 0;
  for (size_t i = 0; i < n; i++)
    if (k[i].pass[0].kind == WL_OP_GEMM || k[i].pass[0].kind == WL_OP_ATTENTION)
      matmul += k[i].pass[0].flops;
  uint64_t b = 2, s = 512, h = 1024;
  assert_int_equal(matmul * 4, 24 * b * s * h * h + 4 * b * s * s * h);
  /* QKV on one rank: m = b s = 1024, n = 3h/t = 768, k = h. */
  assert_string_equal(k[1].name, "qkv");
  assert_int_equal(k[1].pass[0].gemm_m, 1024);
  assert_int_equal(k[1].pass[0].gemm_n, 768);
  assert_int_equal(k[1].pass[0].gemm_k, 1024);
  /* Backward-weights: dW[k x n] = x^T dy, reducing over the tokens. */
  assert_int_equal(k[1].pass[2].gemm_m, 1024);
  assert_int_equal(k[1].pass[2].gemm_k, 1024);
  /* Causal flash attention runs the tiles of 128 x 128 on and below the diagonal: 512 tokens
   * are 4 tiles a side, 4 x 5 / 2 = 10 of the 16 tiles (5/8 of the matrix, against the mask's
   * 1/2); its backward 2.5x the forward. */
  wl_tf causal = tf_of("transformer:layers=4,hidden=1024,heads=16,seq=512,vocab=1000");
  wl_tf_kernel kc[WL_TF_MAX_KERNELS];
  wl_tf_layer_kernels(&causal, &sh, kc);
  assert_int_equal(kc[2].pass[0].flops, 4 * b * s * s * h / 4 * 5 / 8);
  assert_int_equal(kc[2].pass[1].flops, kc[2].pass[0].flops * 5 / 2);
}

static void expect_spec_error(const char *spec, const char *key)
{
  g_autoptr(GError) error = NULL;
  wl_tf tf;
  assert_false(wl_tf_parse(spec, &tf, &error));
  assert_non_null(error);
  assert_int_equal(error->code, DT_ERROR_INPUT);
  if (!strstr(error->message, key))
    fail_msg("'%s' does not name %s", error->message, key);
  assert_null(strchr(error->message, '\n'));
}

static void test_tf_spec(void **state)
{
  (void)state;
  wl_tf tf = tf_of("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=100,ffn=1000,"
                   "kv-heads=2,mlp=swiglu,norm=rmsnorm,causal=0");
  assert_int_equal(tf.ffn, 1000);
  assert_int_equal(tf.kv_heads, 2);
  assert_int_equal(tf.mlp, WL_MLP_SWIGLU);
  assert_false(tf.causal);
  /* Attention: Q and output 2 h^2, K and V 2 h (kv-heads x 64) = 2 x 512 x 128, plus biases
   * (h + 2 x 128 + h); swiglu MLP 3 h f plus biases 2f + h. */
  assert_int_equal(wl_tf_attention_params(&tf), 2 * 512 * 512 + 2 * 512 * 128 + 512 + 256 + 512);
  assert_int_equal(wl_tf_mlp_params(&tf), 3 * 512 * 1000 + 2000 + 512);
  wl_tf d = tf_of("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=100");
  assert_int_equal(d.ffn, 2048);
  assert_int_equal(d.kv_heads, 8);
  assert_true(d.causal);
  assert_true(wl_tf_is_transformer("llama3-8b"));
  assert_false(wl_tf_is_transformer("resnet50"));
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128", "vocab");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,color=red", "color");
  expect_spec_error("transformer:layers=x,hidden=512,heads=8,seq=128,vocab=1", "layers");
  expect_spec_error("transformer:layers=2,hidden=512,heads=7,seq=128,vocab=1", "heads");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,kv-heads=3",
                    "kv-heads");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,mlp=relu", "mlp");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,causal=2",
                    "causal");
}

/* Mixture-of-experts and frontier shapes against their published parameter counts. Mixtral
 * 8x7B (Jiang et al. 2024: 46.7 B, 12.9 B active; by hand from config.json: per block
 * attention 2 h^2 + 2 h (8 x 128) = 41,943,040, eight experts of 3 h ffn = 1,409,286,144, router
 * h x 8, two rmsnorms 2h; embedding and head 2 x 32000 h; final norm h); Mixtral 8x22B (141 B,
 * 39 B active); DeepSeek-V3 (671 B, 37 B active, technical report section 4.2); Qwen3 30B-A3B
 * (30.5 B, 3.3 B active) and 235B-A22B (235 B, 22 B active), Qwen3 technical report Table 2 and
 * model cards; GPT-OSS 120B (model card: 116.83 B, 5.13 B active without the embedding). */
static void test_tf_moe_counts(void **state)
{
  (void)state;
  wl_tf m = tf_of("mixtral-8x7b");
  uint64_t h = 4096, attn = 2 * h * h + 2 * h * 1024, expert = 3 * h * 14336;
  uint64_t block = attn + 8 * expert + 8 * h + 2 * h;
  assert_int_equal(wl_tf_params(&m), 32 * block + 2 * 32000 * h + h);
  assert_int_equal((wl_tf_params(&m) + 5000000) / 10000000, 4670);
  uint64_t active = 32 * (block - 6 * expert) + 2 * 32000 * h + h;
  assert_int_equal(wl_tf_active_params(&m), active);
  assert_int_equal((wl_tf_active_params(&m) + 50000000) / 100000000, 129);
  /* Forward FLOPs of a block: 2 b s (attention, router and two experts) + 4 b s^2 h. */
  assert_int_equal(wl_tf_layer_forward_flops(&m, 1, 4096),
                   2 * 4096 * (attn + 8 * h + 2 * expert) + 4 * 4096ULL * 4096 * h);
  static const struct {
    const char *name;
    double total, active, tolerance;
  } pub[] = {
      {"mixtral-8x22b", 141e9, 39e9, 0.01},   {"deepseek-v3", 671e9, 37e9, 0.02},
      {"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02}, {"qwen3-235b-a22b", 235e9, 22e9, 0.02},
      {"gpt-oss-120b", 116.83e9, 5.13e9 + 201088.0 * 2880, 0.001},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(pub); i++) {
    wl_tf tf = tf_of(pub[i].name);
    double t = (double)wl_tf_params(&tf), a = (double)wl_tf_active_params(&tf);
    if (fabs(t / pub[i].total - 1) > pub[i].tolerance ||
        fabs(a / pub[i].active - 1) > pub[i].tolerance + 0.02)
      fail_msg("%s: %.4g total, %.4g active", pub[i].name, t, a);
  }
  /* DeepSeek-V3's 3 dense blocks come first; its latent attention by hand: q 7168 x 1536 +
   * 1536 (norm) + 1536 x 128 x 192, kv 7168 x 576 + 512 (norm) + 512 x 128 x 256, output
   * 128 x 128 x 7168. */
  wl_tf d = tf_of("deepseek-v3");
  assert_false(wl_tf_block_is_moe(&d, 2));
  assert_true(wl_tf_block_is_moe(&d, 3));
  assert_int_equal(wl_tf_attention_params(&d), 7168ULL * 1536 + 1536 + 1536ULL * 128 * 192 +
                                                   7168ULL * 576 + 512 + 512ULL * 128 * 256 +
                                                   128ULL * 128 * 7168);
  assert_int_equal(wl_tf_blocks_params(&d, 0, 4),
                   3 * wl_tf_block_params(&d, 0) + wl_tf_block_params(&d, 3));
  /* Its attention's score and value products at width 192 and 128 per head. */
  assert_int_equal(wl_tf_block_forward_flops(&d, 0, 1, 4096) -
                       2 * 4096 * (wl_tf_attention_params(&d) - 1536 - 512 + 3 * 7168ULL * 18432),
                   2 * 4096ULL * 4096 * 128 * (192 + 128));
}

/* The kernels of a mixture-of-experts block add up, over the t ranks, to its forward FLOPs
 * (router on every rank: counted once per rank), non-causal. */
static void test_tf_moe_kernels(void **state)
{
  (void)state;
  wl_tf tf = tf_of("transformer:family=llama,layers=2,hidden=1024,heads=16,seq=512,vocab=1000,"
                   "causal=0,experts=8,topk=2,moe-ffn=512,shared-experts=1");
  wl_tf_shard sh = {.micro_batch = 2, .seq = 512, .tp = 4, .precision = WL_PREC_BF16};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_block_kernels(&tf, &sh, 1, k);
  uint64_t matmul = 0, router = 0;
  for (size_t i = 0; i < n; i++) {
    if (k[i].pass[0].kind == WL_OP_GEMM || k[i].pass[0].kind == WL_OP_ATTENTION)
      matmul += k[i].pass[0].flops;
    if (strcmp(k[i].name, "router") == 0)
      router = k[i].pass[0].flops;
  }
  uint64_t T = 1024, h = 1024;
  /* 2 T (attention 4 h^2 + router 8 h + two routed and one shared expert of 3 h 512) +
   * 4 b s^2 h; every GEMM but the router's is split over the 4 ranks. */
  uint64_t full = 2 * T * (4 * h * h + 8 * h + 3 * 3 * h * 512) + 4 * 2 * 512ULL * 512 * h;
  assert_int_equal(router, 2 * T * 8 * h);
  assert_int_equal((matmul - router) * 4 + router, full);
  /* Each expert's GEMM: T x topk / experts = 256 rows, 2 x 512 / 4 gate and up columns. */
  for (size_t i = 0; i < n; i++)
    if (strcmp(k[i].name, "experts_fc1") == 0) {
      assert_int_equal(k[i].pass[0].gemm_batch, 8);
      assert_int_equal(k[i].pass[0].gemm_m, 256);
      assert_int_equal(k[i].pass[0].gemm_n, 256);
    }
  assert_int_equal(wl_tf_block_forward_flops(&tf, 1, 2, 512), full);
  /* Expert parallelism over 4 devices (expert tensor parallelism 1): the rank routes its
   * T / t = 256 tokens; it holds 8 / 4 = 2 whole experts, each of 256 x 2 x 4 / 8 = 256 rows
   * (what the 4 devices of the group send it), gate and up 2 x 512 wide. */
  sh.ep = 4;
  n = wl_tf_block_kernels(&tf, &sh, 1, k);
  uint64_t experts = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(k[i].name, "router") == 0)
      assert_int_equal(k[i].pass[0].gemm_m, 256);
    if (strcmp(k[i].name, "experts_fc1") == 0) {
      assert_int_equal(k[i].pass[0].gemm_batch, 2);
      assert_int_equal(k[i].pass[0].gemm_m, 256);
      assert_int_equal(k[i].pass[0].gemm_n, 1024);
    }
    if (g_str_has_prefix(k[i].name, "experts_fc"))
      experts += k[i].pass[0].flops;
  }
  /* Over the 4 ranks: the routed experts' 2 T topk 3 h 512 FLOPs. */
  assert_int_equal(experts * 4, 2 * T * 2 * 3 * h * 512);
  assert_int_equal(wl_tf_blocks_expert_params(&tf, 0, 2), 2 * 8 * wl_tf_expert_params(&tf));
}

static void test_tf_spec_frontier(void **state)
{
  (void)state;
  /* family=llama: swiglu, rmsnorm, rotary (no position parameters), no biases, untied head; the
   * keys after it override (and so do keys before it). */
  wl_tf l = tf_of("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=100,family=llama");
  assert_int_equal(l.mlp, WL_MLP_SWIGLU);
  assert_int_equal(l.norm, WL_NORM_RMSNORM);
  assert_false(l.bias);
  assert_false(l.tied_head);
  assert_int_equal(wl_tf_embedding_params(&l), 100 * 512);
  assert_int_equal(wl_tf_head_params(&l), 512 + 100 * 512);
  wl_tf g = tf_of("transformer:family=llama,layers=2,hidden=512,heads=8,seq=128,vocab=100,"
                  "positions=learned,tied=1,bias=1");
  assert_int_equal(wl_tf_embedding_params(&g), 100 * 512 + 128 * 512);
  assert_int_equal(wl_tf_head_params(&g), 512);
  /* head-dim: 8 heads of 128 = 1024 wide attention on h 512: Q and output 2 x 512 x 1024, K and
   * V (2 kv-heads) 2 x 512 x 256. */
  wl_tf w = tf_of("transformer:family=llama,layers=2,hidden=512,heads=8,seq=128,vocab=100,"
                  "head-dim=128,kv-heads=2");
  assert_int_equal(wl_tf_attention_params(&w), 2 * 512 * 1024 + 2 * 512 * 256);
  /* heads that do not divide hidden are fine with head-dim. */
  wl_tf odd = tf_of("transformer:layers=2,hidden=500,heads=8,seq=128,vocab=100,head-dim=64");
  assert_int_equal(wl_tf_head_dim(&odd), 64);
  /* Experts: the first dense-layers blocks keep the dense MLP. */
  wl_tf e = tf_of("transformer:family=llama,layers=4,hidden=512,heads=8,seq=128,vocab=100,"
                  "ffn=2048,experts=4,topk=2,moe-ffn=256,shared-experts=1,dense-layers=1");
  assert_false(wl_tf_block_is_moe(&e, 0));
  assert_true(wl_tf_block_is_moe(&e, 1));
  uint64_t attn = wl_tf_attention_params(&e), norms = 2 * 512;
  assert_int_equal(wl_tf_block_params(&e, 0), attn + 3 * 512 * 2048 + norms);
  assert_int_equal(wl_tf_block_params(&e, 1), attn + 512 * 4 + 5 * 3 * 512 * 256 + norms);
  assert_int_equal(wl_tf_block_active_params(&e, 1), attn + 512 * 4 + 3 * 3 * 512 * 256 + norms);
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,family=bert",
                    "family");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,bias=2", "bias");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,positions=none",
                    "positions");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,topk=2", "topk");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,experts=4,topk=5",
                    "topk");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,experts=4,"
                    "dense-layers=3", "dense-layers");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,experts=0",
                    "experts");
  expect_spec_error("transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1,experts=2,"
                    "shared-experts=-1", "shared-experts");
}

/* Group-limited routing: the spec keys, their refusals, and the expected nodes a token reaches
 * (wl_tf_routed_nodes) worked out by hand from the binomial counts. */
static void test_tf_routing(void **state)
{
  (void)state;
  const char *base = "transformer:layers=2,hidden=512,heads=8,seq=128,vocab=1";
  g_autofree char *ok = g_strdup_printf("%s,experts=64,topk=8,expert-groups=8,group-topk=4",
                                        base);
  wl_tf t = tf_of(ok);
  assert_int_equal(t.expert_groups, 8);
  assert_int_equal(t.group_topk, 4);
  /* Not given: not limited. */
  g_autofree char *plain = g_strdup_printf("%s,experts=64,topk=8", base);
  assert_int_equal(tf_of(plain).expert_groups, 0);
  static const char *const bad[][2] = {
      {",experts=64,topk=8,group-topk=4", "group-topk"},           /* needs expert-groups */
      {",experts=64,topk=8,expert-groups=8", "group-topk"},        /* missing */
      {",experts=64,topk=8,expert-groups=6,group-topk=4", "expert-groups"}, /* 6 !| 64 */
      {",experts=64,topk=8,expert-groups=8,group-topk=9", "group-topk"},    /* > groups */
      {",experts=64,topk=8,expert-groups=32,group-topk=2", "group-topk"},   /* 2 x 2 < 8 */
      {",expert-groups=8,group-topk=4", "expert-groups"},          /* no experts */
      {",experts=64,topk=8,expert-groups=0,group-topk=4", "expert-groups"},
      {",experts=64,topk=8,expert-groups=8,group-topk=-1", "group-topk"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *spec = g_strconcat(base, bad[i][0], NULL);
    expect_spec_error(spec, bad[i][1]);
  }

  /* DeepSeek-V3 (256 experts, top 8, 4 of 8 groups): on N nodes holding 8 / N groups each, a
   * node is missed when all 4 chosen groups lie elsewhere, C(8 - 8/N, 4) / C(8, 4): on 8 nodes
   * 35/70, so 8 x 1/2 = 4 nodes; on 4 nodes 15/70, 4 x 55/70 = 22/7; on 2 nodes 1/70,
   * 2 x 69/70 = 138/70; on one node 1. On 16 nodes each group spans 2 nodes of 16 experts and
   * gets 2 of the copies, which miss one of them with chance C(16,2)/C(32,2) = 120/496: 4
   * groups x 2 x 376/496 = 188/31. */
  wl_tf d = tf_of("deepseek-v3");
  assert_int_equal(d.expert_groups, 8);
  assert_int_equal(d.group_topk, 4);
  assert_float_equal(wl_tf_routed_nodes(&d, 8), 4.0, 1e-12);
  assert_float_equal(wl_tf_routed_nodes(&d, 4), 22.0 / 7, 1e-12);
  assert_float_equal(wl_tf_routed_nodes(&d, 2), 138.0 / 70, 1e-12);
  assert_float_equal(wl_tf_routed_nodes(&d, 1), 1.0, 1e-12);
  assert_float_equal(wl_tf_routed_nodes(&d, 16), 188.0 / 31, 1e-12);
  /* Fewer copies than chosen groups (top 2 of 4 groups of 8): 2 groups of the 8, one a node:
   * 8 (1 - C(7,2)/C(8,2)) = 8 x 7/28 = 2. */
  g_autofree char *k2 = g_strdup_printf("%s,experts=64,topk=2,expert-groups=8,group-topk=4",
                                        base);
  wl_tf t2 = tf_of(k2);
  assert_float_equal(wl_tf_routed_nodes(&t2, 8), 2.0, 1e-12);
  /* Copies not spread evenly over the groups: 32 experts in 2 groups, both chosen, top 5, 4
   * nodes of 8 experts (each group spans 2): one group takes 3 copies, missing one of its nodes
   * with chance C(8,3)/C(16,3) = 1/10, the other 2, with chance C(8,2)/C(16,2) = 28/120:
   * 2 x 9/10 + 2 x 92/120 = 10/3. */
  g_autofree char *k5 = g_strdup_printf("%s,experts=32,topk=5,expert-groups=2,group-topk=2",
                                        base);
  wl_tf t5 = tf_of(k5);
  assert_float_equal(wl_tf_routed_nodes(&t5, 4), 10.0 / 3, 1e-12);
  /* No groups: top 2 of 64 experts over 4 nodes of 16, a node missed with chance
   * C(48,2)/C(64,2) = 1128/2016: 4 x 888/2016 = 37/21. Groups that neither fill whole nodes nor
   * are filled by them (6 groups on 4 nodes of 12) count the same way: 48 experts, top 4,
   * 4 (1 - C(36,4)/C(48,4)) = 4 x 135675/194580. */
  assert_float_equal(wl_tf_routed_nodes(&(wl_tf){.experts = 64, .topk = 2}, 4), 37.0 / 21,
                     1e-12);
  g_autofree char *g6 = g_strdup_printf("%s,experts=48,topk=4,expert-groups=6,group-topk=3",
                                        base);
  wl_tf t6 = tf_of(g6);
  assert_float_equal(wl_tf_routed_nodes(&t6, 4), 4.0 * 135675 / 194580, 1e-12);
}

static void expect_partition(uint32_t layers, const wl_tf_partition_opts *o,
                             const uint32_t *want)
{
  g_autoptr(GError) error = NULL;
  g_autofree uint32_t *first = g_new(uint32_t, o->stages);
  g_autofree uint32_t *count = g_new(uint32_t, o->stages);
  if (!wl_tf_partition(layers, o, first, count, NULL, &error))
    fail_msg("%s", error->message);
  uint32_t next = 0;
  for (uint32_t v = 0; v < o->stages; v++) {
    if (count[v] != want[v] || first[v] != next)
      fail_msg("stage %u: %u blocks from %u, expected %u from %u", v, count[v], first[v],
               want[v], next);
    next += want[v];
  }
}

static void expect_partition_error(uint32_t layers, const wl_tf_partition_opts *o,
                                   const char *option)
{
  g_autoptr(GError) error = NULL;
  uint32_t first[64], count[64];
  g_assert(o->stages <= 64);
  assert_false(wl_tf_partition(layers, o, first, count, NULL, &error));
  assert_int_equal(error->code, DT_ERROR_INPUT);
  if (!g_str_has_prefix(error->message, option))
    fail_msg("'%s' does not start with %s", error->message, option);
}

/* Llama 3 405B's 126 blocks on 8 stages: 15.75 each, so two stages of 15 (first and last) and
 * six of 16. BLOOM 176B's 70 blocks on 12 stages with the embedding counted as a block: 71
 * units, 5 each and 11 over, so the ten middle stages and the first hold 6 units and the first's
 * sixth is the embedding. DeepSeek-V3 with Megatron-Core's layout for PP 16 x VPP 2. */
static void test_tf_partition(void **state)
{
  (void)state;
  wl_tf_partition_opts o = {.stages = 8};
  expect_partition(126, &o, (uint32_t[]){15, 16, 16, 16, 16, 16, 16, 15});
  o.stages = 4;
  expect_partition(32, &o, (uint32_t[]){8, 8, 8, 8});
  o.stages = 12;
  o.embedding_in_split = TRUE;
  expect_partition(70, &o, (uint32_t[]){5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5});
  o.loss_in_split = TRUE;   /* 72 units: 6 each, less one on each end */
  expect_partition(70, &o, (uint32_t[]){5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5});
  wl_tf_partition_opts s = {.stages = 4, .split = (int64_t[]){7, 16, 25}, .n_split = 3};
  expect_partition(32, &s, (uint32_t[]){7, 9, 9, 7});
  wl_tf_partition_opts l = {.stages = 32, .layout = "Et*3|(tt|)*29,m|L", .mtp = 1};
  uint32_t want[32];
  want[0] = 3;
  for (int v = 1; v < 30; v++)
    want[v] = 2;
  want[30] = want[31] = 0;
  expect_partition(61, &l, want);
  wl_tf_partition_opts l2 = {.stages = 3, .layout = "E(t)*2|t t|t,L"};
  expect_partition(5, &l2, (uint32_t[]){2, 2, 1});
  /* Refused, naming the option. */
  wl_tf_partition_opts bad = {.stages = 4, .split = (int64_t[]){7, 7, 25}, .n_split = 3};
  expect_partition_error(32, &bad, "--split");
  bad.n_split = 2;
  expect_partition_error(32, &bad, "--split");
  wl_tf_partition_opts bl = {.stages = 3, .layout = "Et|t|tL"};
  expect_partition(3, &bl, (uint32_t[]){1, 1, 1});
  bl.layout = "Et|tE|t,L";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "Et|t|tt,L";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "Et|(t|t,L";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "Et|t*0|t,L";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "Et|x|t,L";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "(((((((((((((((((t)))))))))))))))))|t|t";
  expect_partition_error(3, &bl, "--pp-layout");
  bl.layout = "(t*1000000)*1000000|t|t";
  expect_partition_error(3, &bl, "--pp-layout");
  /* Multi-token-prediction modules: as many m as the model has, all on one stage; without a
   * layout they go with the loss on the last stage. */
  uint32_t first[3], count[3], at = 99;
  bl.layout = "Et|tm|tL";
  expect_partition_error(3, &bl, "--pp-layout");   /* the model has none */
  bl.mtp = 2;
  expect_partition_error(3, &bl, "--pp-layout");   /* one m for two */
  bl.layout = "Et|tm|tmL";
  expect_partition_error(3, &bl, "--pp-layout");   /* on two stages */
  bl.layout = "Et|tmm|tL";
  expect_partition_error(3, &bl, "--pp-layout");   /* before the last block */
  bl.layout = "Et|tt|mmL";
  assert_true(wl_tf_partition(3, &bl, first, count, &at, NULL));
  assert_int_equal(at, 2);
  bl.layout = "Et|ttmm|L";
  assert_true(wl_tf_partition(3, &bl, first, count, &at, NULL));
  assert_int_equal(at, 1);
  wl_tf_partition_opts spread = {.stages = 3, .mtp = 1};
  assert_true(wl_tf_partition(3, &spread, first, count, &at, NULL));
  assert_int_equal(at, 2);
  wl_tf_partition_opts many = {.stages = 40};
  expect_partition_error(3, &many, "--pp");
}

/* Reserved memory: the CUDA context (512 MiB), NCCL's Simple (4 MiB), LL128 (120 x 640 x 8 x 8)
 * and LL (8 x 512 x 8 x 16) buffers on 32 channels per communicator and 2 per pipeline peer,
 * and 5% of the transient bytes. */
static void test_tf_reserved(void **state)
{
  (void)state;
  wl_reserved_bytes r;
  uint64_t channel = 4194304 + 4915200 + 524288;
  uint64_t total = wl_reserved_memory(2, 1, 2000000000, &r);
  assert_int_equal(r.context, 536870912);
  assert_int_equal(r.nccl, (2 * 32 + 2) * channel);
  assert_int_equal(r.slack, 100000000);
  assert_int_equal(total, r.context + r.nccl + r.slack);
  assert_int_equal(wl_reserved_memory(0, 0, 0, &r), 536870912);
}

/* Memory per device, worked out by hand. */
static void test_tf_memory(void **state)
{
  (void)state;
  wl_tf_state_bytes m;
  /* 1e9 parameters in fp16 with Adam: 2 + 2 + 12 = 16 bytes each. */
  wl_tf_state_memory(1000000000, 8, 0, WL_PREC_FP16, &m);
  assert_int_equal(m.weights + m.gradients + m.optimizer, 16000000000ULL);
  assert_int_equal(m.optimizer, 12000000000ULL);
  wl_tf_state_memory(1000000000, 8, 1, WL_PREC_FP16, &m);
  assert_int_equal(m.optimizer, 1500000000ULL);
  assert_int_equal(m.gradients, 2000000000ULL);
  wl_tf_state_memory(1000000000, 8, 2, WL_PREC_FP16, &m);
  assert_int_equal(m.gradients, 250000000ULL);
  assert_int_equal(m.weights, 2000000000ULL);
  wl_tf_state_memory(1000000000, 8, 3, WL_PREC_FP16, &m);
  assert_int_equal(m.weights, 250000000ULL);
  /* Korthikanti et al. for GPT-3 175B (s 2048, b 1, h 12288, a 96) at t = 8: s b h = 25165824,
   * 5 a s / (h t) = 10. */
  wl_tf g = tf_of("gpt3-175b");
  uint64_t sbh = 2048ULL * 12288;
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 8, FALSE, WL_RECOMPUTE_NONE,
                                                WL_PREC_FP16), sbh * (10 + 3 + 10));
  /* Sequence parallel: s b h / t (34 + 5 a s / h) = sbh x 114 / 8. */
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 8, TRUE, WL_RECOMPUTE_NONE,
                                                WL_PREC_FP16), sbh * 114 / 8);
  /* Selective: s b h (10 + 24/t); with sequence parallelism 34 s b h / t. */
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 8, FALSE, WL_RECOMPUTE_SELECTIVE,
                                                WL_PREC_FP16), sbh * 13);
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 8, TRUE, WL_RECOMPUTE_SELECTIVE,
                                                WL_PREC_FP16), sbh * 34 / 8);
  /* No parallelism: s b h (34 + 5 a s / h) = sbh x 114. */
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 1, FALSE, WL_RECOMPUTE_NONE,
                                                WL_PREC_FP16), sbh * 114);
  /* Full recomputation keeps the block's input: 2 s b h. */
  assert_int_equal(wl_tf_layer_activation_bytes(&g, 2048, 1, 8, FALSE, WL_RECOMPUTE_FULL,
                                                WL_PREC_FP16), 2 * sbh);
  /* In flight: 1F1B holds P - rank micro-batches (at most m); GPipe all m; interleaved first
   * stage of P = 8, V = 3: 7 x 2 + 2 x 8 + 1 = 31 chunks = P (1 + (P-1)/(P V)) x V. */
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_1F1B, 8, 1, 64, 0), 8);
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_1F1B, 8, 1, 64, 7), 1);
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_1F1B, 8, 1, 4, 0), 4);
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_GPIPE, 8, 1, 64, 3), 64);
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_INTERLEAVED, 8, 3, 64, 0), 31);
  assert_int_equal(wl_tf_inflight_chunks(WL_SCHED_INTERLEAVED, 8, 3, 64, 7), 17);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tf_param_counts), cmocka_unit_test(test_tf_flops_eq3),
      cmocka_unit_test(test_tf_kernels),       cmocka_unit_test(test_tf_spec),
      cmocka_unit_test(test_tf_memory),       cmocka_unit_test(test_tf_moe_counts),
      cmocka_unit_test(test_tf_moe_kernels),  cmocka_unit_test(test_tf_spec_frontier),
      cmocka_unit_test(test_tf_routing),
      cmocka_unit_test(test_tf_partition),    cmocka_unit_test(test_tf_reserved),
      cmocka_unit_test(test_tf_mtp),
      cmocka_unit_test(test_param_counts),     cmocka_unit_test(test_chaos_counts),
      cmocka_unit_test(test_forward_macs),     cmocka_unit_test(test_resnet_v1),
      cmocka_unit_test(test_zoo_rules),
      cmocka_unit_test(test_valid_taps),       cmocka_unit_test(test_conv_costs),
      cmocka_unit_test(test_grouped_strided_conv), cmocka_unit_test(test_fc_costs),
      cmocka_unit_test(test_pool_costs),       cmocka_unit_test(test_elementwise_costs),
      cmocka_unit_test(test_joins),            cmocka_unit_test(test_update_and_memory),
      cmocka_unit_test(test_lenet_activations), cmocka_unit_test(test_sum_range),
      cmocka_unit_test(test_json_round_trip),  cmocka_unit_test(test_paleo_import),
      cmocka_unit_test(test_paleo_lines),      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_strict_json),      cmocka_unit_test(test_bad_graph_in_code),
      cmocka_unit_test(test_find_line),        cmocka_unit_test(test_unordered_file),
      cmocka_unit_test(test_second_variables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
