/* Fuzz harness for the workload readers: our JSON format and the Paleo importer, both behind
 * wl_model_load_data() (the format is detected from the content), then wl_net_new() at a small
 * batch, and again at the largest batch a scenario accepts (2^24).
 *
 * Invariants on a model that loads: layers come parents first; the counts of every layer agree
 * with the same formulas worked in 128-bit arithmetic (output elements, parameters, flatten
 * sizes, multiply-adds), so a count that wrapped around 2^64 or 2^32 is caught; the totals
 * and the memory figure are the sums of their parts without overflow; and the model written
 * back as JSON loads again with the same layers and the same totals. */
#include "fuzz.h"

#include "util.h"
#include "workloads.h"

#include <string.h>

#define SOURCE "fuzz-workload.json"
#define BATCH 2
#define BIG_BATCH (1u << 24)

typedef unsigned __int128 u128;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

/* Output size and leading padding along one axis from the hyper-parameters, worked in 128 bits
 * (docs/workloads.md): explicit padding, or TensorFlow's SAME (out = ceil(in / s), padding
 * split with the extra element after), and PyTorch's ceil_mode for pools. */
static u128 axis_out(u128 in, u128 k, u128 s, u128 pad, u128 dil, gboolean same, gboolean ceil_mode,
                     u128 *pad_before)
{
  u128 span = dil * (k - 1) + 1;
  if (same) {
    u128 out = (in + s - 1) / s;
    u128 need = (out - 1) * s + span;
    *pad_before = (need > in ? need - in : 0) / 2;
    return out;
  }
  *pad_before = pad;
  if (in + 2 * pad < span)
    return 0;
  u128 room = in + 2 * pad - span;
  u128 out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
  if (ceil_mode && out > 1 && (out - 1) * s >= in + pad)
    out--;
  return out;
}

/* Pairs (output position p, tap r) whose input row p*s + r*dil - pad falls inside [0, in),
 * position by position; UINT64_MAX when out is too long to walk here. */
static uint64_t axis_valid_taps(u128 in, u128 out, u128 k, u128 s, u128 dil, u128 pad)
{
  if (out > (1u << 16))
    return UINT64_MAX;
  __int128 total = 0;
  for (__int128 p = 0; p < (__int128)out; p++) {
    __int128 lo = (__int128)pad - p * (__int128)s;          /* r*dil >= lo */
    __int128 hi = (__int128)in - 1 + (__int128)pad - p * (__int128)s; /* r*dil <= hi */
    if (hi < 0)
      continue;
    __int128 r_lo = lo <= 0 ? 0 : (lo + (__int128)dil - 1) / (__int128)dil;
    __int128 r_hi = hi / (__int128)dil;
    if (r_hi > (__int128)k - 1)
      r_hi = (__int128)k - 1;
    if (r_hi >= r_lo)
      total += r_hi - r_lo + 1;
  }
  return (uint64_t)total;
}

/* Shapes and backward multiply-adds of convolutions and pools against the oracles above. */
static void check_window(const wl_net *net, const wl_layer *L)
{
  const wl_hparams *hp = L->hp;
  gboolean conv = L->kind == WL_LAYER_CONV;
  if (!conv && L->kind != WL_LAYER_MAXPOOL && L->kind != WL_LAYER_AVGPOOL)
    return;
  u128 dh = conv ? hp->dh : 1, dw = conv ? hp->dw : 1;
  gboolean ceil_mode = !conv && hp->ceil_mode;
  u128 pad_h, pad_w;
  u128 oh = axis_out(L->in_h, hp->kh, hp->sh, hp->ph, dh, hp->pad_same, ceil_mode, &pad_h);
  u128 ow = axis_out(L->in_w, hp->kw, hp->sw, hp->pw, dw, hp->pad_same, ceil_mode, &pad_w);
  FUZZ_CHECK(oh == L->out_h && ow == L->out_w, "layer '%s': output %ux%u, formula gives %llux%llu",
             L->name, L->out_h, L->out_w, (unsigned long long)oh, (unsigned long long)ow);
  if (!conv)
    return;
  uint64_t vh = axis_valid_taps(L->in_h, oh, hp->kh, hp->sh, dh, pad_h);
  uint64_t vw = axis_valid_taps(L->in_w, ow, hp->kw, hp->sw, dw, pad_w);
  if (vh == UINT64_MAX || vw == UINT64_MAX)
    return;
  u128 N = wl_net_batch(net);
  u128 bias = hp->bias ? L->out_elems : 0;
  /* A layer read by several children sums their gradients in its first backward pass: here
   * backward-weights when there is no backward-data (the first layer). */
  u128 sum = L->n_children > 1 && !L->has_pass[WL_PASS_BACKWARD_DATA]
                 ? (u128)(L->n_children - 1) * L->out_elems
                 : 0;
  u128 flops = 2 * N * hp->out * (L->in_c / hp->groups) * vh * vw + bias + sum;
  FUZZ_CHECK(flops == L->cost[WL_PASS_BACKWARD_WEIGHTS].flops,
             "layer '%s': backward-weights FLOPs are not 2 x batch x out x in/groups x valid taps "
             "(%llu x %llu) + bias + gradient sums", L->name, (unsigned long long)vh,
             (unsigned long long)vw);
}

static void check_layer(const wl_net *net, size_t i)
{
  const wl_layer *L = wl_net_layer(net, i);
  const wl_hparams *hp = L->hp;
  const u128 N = wl_net_batch(net);
  for (int j = 0; j < L->n_parents; j++)
    FUZZ_CHECK(L->parents[j] >= -1 && L->parents[j] < (int)i, "layer '%s': parent %d of %zu",
               L->name, L->parents[j], i);
  u128 out = N * L->out_c * L->out_h * L->out_w;
  FUZZ_CHECK(out == L->out_elems, "layer '%s': %u x %u x %u x batch is not out_elems", L->name,
             L->out_c, L->out_h, L->out_w);
  u128 in_sample = (u128)L->in_c * L->in_h * L->in_w;
  u128 params = 0, macs = 0;
  switch (L->kind) {
  case WL_LAYER_CONV:
    FUZZ_CHECK(hp->groups > 0 && L->in_c % hp->groups == 0, "layer '%s': groups", L->name);
    params = (u128)hp->out * (L->in_c / hp->groups) * hp->kh * hp->kw + (hp->bias ? hp->out : 0);
    macs = out * (L->in_c / hp->groups) * hp->kh * hp->kw;
    break;
  case WL_LAYER_FC:
    params = in_sample * hp->out + (hp->bias ? hp->out : 0);
    macs = N * in_sample * hp->out;
    break;
  case WL_LAYER_BATCHNORM:
    params = 2 * (u128)L->in_c;
    break;
  case WL_LAYER_FLATTEN:
    FUZZ_CHECK((u128)L->out_c == in_sample, "layer '%s': flatten of %u x %u x %u gives %u",
               L->name, L->in_c, L->in_h, L->in_w, L->out_c);
    break;
  default:
    break;
  }
  /* Elements read by the layer: one term per parent (the network input when -1). */
  u128 in = 0;
  for (int j = 0; j < L->n_parents; j++) {
    int pj = L->parents[j];
    if (pj >= 0) {
      const wl_layer *P = wl_net_layer(net, (size_t)pj);
      in += N * P->out_c * P->out_h * P->out_w;
    } else {
      uint32_t c, h, w;
      wl_model_input_shape(wl_net_model(net), &c, &h, &w);
      in += N * c * h * w;
    }
  }
  const wl_op_cost *fw = &L->cost[WL_PASS_FORWARD];
  if (L->kind == WL_LAYER_LRN)
    FUZZ_CHECK(fw->flops == out * (2 * (u128)hp->lrn_size + 4), "layer '%s': LRN FLOPs wrapped",
               L->name);
  if (L->kind == WL_LAYER_ADD)
    FUZZ_CHECK(fw->flops == out * (u128)(L->n_parents - 1), "layer '%s': add FLOPs wrapped",
               L->name);
  if (L->kind == WL_LAYER_GLOBALPOOL)
    FUZZ_CHECK(fw->flops == in, "layer '%s': global pooling FLOPs are not its input elements",
               L->name);
  /* Forward reads the input once (batch norm: twice, plus scale and shift). */
  const unsigned e = wl_precision_bytes(wl_net_precision(net));
  if (L->kind == WL_LAYER_BATCHNORM)
    FUZZ_CHECK(fw->bytes_read == 2 * in * e + (u128)L->params * e,
               "layer '%s': forward reads are not its input (or wrapped)", L->name);
  else if (L->kind != WL_LAYER_CONV && L->kind != WL_LAYER_FC)
    FUZZ_CHECK(fw->bytes_read == in * e, "layer '%s': forward reads are not its input (or wrapped)",
               L->name);
  check_window(net, L);
  FUZZ_CHECK(params == L->params, "layer '%s': %llu parameters counted, formula gives more",
             L->name, (unsigned long long)L->params);
  FUZZ_CHECK(macs == L->macs, "layer '%s': multiply-adds wrapped", L->name);
  if (L->kind == WL_LAYER_CONV || L->kind == WL_LAYER_FC)
    FUZZ_CHECK(L->cost[WL_PASS_FORWARD].flops == 2 * macs + (hp->bias ? out : 0),
               "layer '%s': forward FLOPs are not 2 per multiply-add plus bias", L->name);
  for (int p = 0; p < WL_PASS_COUNT; p++) {
    const wl_op_cost *c = &L->cost[p];
    FUZZ_CHECK(c->pass == (wl_pass)p, "layer '%s': pass %d labelled %d", L->name, p, c->pass);
    FUZZ_CHECK(L->has_pass[p] || (c->flops == 0 && c->bytes_read == 0 && c->bytes_written == 0),
               "layer '%s': pass %s does not run but has a cost", L->name, wl_pass_name(p));
  }
}

/* Totals and memory are sums of the layers; recomputed here in 128 bits. */
static void check_sums(const wl_net *net)
{
  u128 params = 0, fwd = 0, bwd = 0, saved = 0, fwd_bytes = 0;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *L = wl_net_layer(net, i);
    params += L->params;
    fwd += L->cost[WL_PASS_FORWARD].flops;
    fwd_bytes += (u128)L->cost[WL_PASS_FORWARD].bytes_read + L->cost[WL_PASS_FORWARD].bytes_written;
    bwd += (u128)L->cost[WL_PASS_BACKWARD_DATA].flops + L->cost[WL_PASS_BACKWARD_WEIGHTS].flops;
    saved += L->saved_bytes;
  }
  wl_totals t;
  wl_net_totals(net, &t);
  FUZZ_CHECK(params == t.params && fwd == t.forward_flops && bwd == t.backward_flops &&
                 saved == t.saved_bytes && fwd_bytes == t.forward_bytes,
             "totals are not the sums of the layers (or wrapped)");
  for (int o = 0; o < WL_OPT_COUNT; o++) {
    wl_memory mem;
    wl_net_memory(net, (wl_optimizer)o, &mem);
    u128 sum = (u128)mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes +
               mem.activations_bytes + mem.workspace_bytes;
    FUZZ_CHECK(sum == mem.total_bytes, "memory total is not the sum of its parts (or wrapped)");
    FUZZ_CHECK(mem.activations_bytes >= saved, "activations below the saved bytes");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(wl_model) m = wl_model_load_data(SOURCE, (const char *)data, size, &error);
  if (!m) {
    fuzz_check_error(error, SOURCE);
    return 0;
  }
  FUZZ_CHECK(wl_model_n_layers(m) > 0, "a model without layers loaded");
  /* The largest per-device batch a scenario accepts, where counts are largest. */
  g_autoptr(wl_net) big = wl_net_new(m, BIG_BATCH, WL_PREC_FP16, &error);
  if (big) {
    for (size_t i = 0; i < wl_net_n_layers(big); i++)
      check_layer(big, i);
    check_sums(big);
  } else {
    fuzz_check_error(error, NULL);
    g_clear_error(&error);
  }
  g_autoptr(wl_net) net = wl_net_new(m, BATCH, WL_PREC_FP32, &error);
  if (!net) {
    fuzz_check_error(error, NULL);
    return 0;
  }
  FUZZ_CHECK(wl_net_n_layers(net) == wl_model_n_layers(m), "net and model differ in layers");
  for (size_t i = 0; i < wl_net_n_layers(net); i++)
    check_layer(net, i);
  check_sums(net);

  /* Written back in our format, the model reads the same. */
  g_autofree char *json = wl_model_to_json(m);
  g_autoptr(GError) e2 = NULL;
  g_autoptr(wl_model) m2 = wl_model_load_data("fuzz-again.json", json, strlen(json), &e2);
  FUZZ_CHECK(m2 != NULL, "the model written back is refused: %s\n%s", e2 ? e2->message : "", json);
  FUZZ_CHECK(wl_model_n_layers(m2) == wl_model_n_layers(m), "layer count changed on re-reading");
  g_autoptr(wl_net) net2 = wl_net_new(m2, BATCH, WL_PREC_FP32, &e2);
  FUZZ_CHECK(net2 != NULL, "the re-read model does not instantiate: %s", e2 ? e2->message : "");
  wl_totals a, b;
  wl_net_totals(net, &a);
  wl_net_totals(net2, &b);
  FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0, "totals changed on re-reading");
  fuzz_accepted();
  return 0;
}
