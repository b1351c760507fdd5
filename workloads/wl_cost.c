/* Instantiating a model for a batch size and precision: the exact cost of every layer pass.
 *
 * Every formula is written out in docs/workloads.md. In short: convolutions and fully
 * connected layers count one multiply-add per (output element, kernel tap, input channel) in
 * forward; their backward passes count the multiply-adds whose input position lies inside the
 * input (taps falling in the padding contribute nothing to a gradient), so the three passes
 * differ whenever there is padding. Element-wise, pooling, normalization and loss layers count
 * the arithmetic of their usual kernels per element. Bytes are what each pass reads and
 * writes from device memory. */
#include "wl_internal.h"
#include "util.h"

#include <string.h>

struct wl_net {
  const wl_model *model;  /* borrowed: the model outlives the net */
  uint32_t batch;
  wl_precision precision;
  size_t n;
  wl_layer *layers;
  gboolean *runs_backward;
};

static const char *const optimizer_names[WL_OPT_COUNT] = {"sgd", "momentum", "adam"};

const char *wl_optimizer_name(wl_optimizer o)
{
  return (unsigned)o < WL_OPT_COUNT ? optimizer_names[o] : "?";
}

int wl_optimizer_parse(const char *name)
{
  if (name && strcmp(name, "sgd-momentum") == 0)
    return WL_OPT_SGD_MOMENTUM;
  for (int i = 0; name && i < WL_OPT_COUNT; i++)
    if (strcmp(name, optimizer_names[i]) == 0)
      return i;
  return -1;
}

/* Bytes per gradient element: fp16/bf16 training keeps 16-bit gradients; fp32, tf32 and amp
 * accumulate gradients in fp32. */
static unsigned grad_elem_bytes(wl_precision p)
{
  return (p == WL_PREC_FP16 || p == WL_PREC_BF16) ? 2 : 4;
}

/* Bytes per parameter held on the device: fp16/bf16 add an fp32 master copy to the 16-bit
 * working copy. */
static unsigned weight_store_bytes(wl_precision p)
{
  return (p == WL_PREC_FP16 || p == WL_PREC_BF16) ? 2 + 4 : 4;
}

static wl_op_kind op_kind(wl_layer_kind k)
{
  switch (k) {
  case WL_LAYER_CONV: return WL_OP_CONV;
  case WL_LAYER_FC: return WL_OP_GEMM;
  case WL_LAYER_MAXPOOL:
  case WL_LAYER_AVGPOOL:
  case WL_LAYER_GLOBALPOOL: return WL_OP_POOL;
  case WL_LAYER_LRN: return WL_OP_LRN;
  case WL_LAYER_BATCHNORM: return WL_OP_BATCHNORM;
  case WL_LAYER_CONCAT:
  case WL_LAYER_FLATTEN: return WL_OP_CONCAT;
  case WL_LAYER_SOFTMAX: return WL_OP_SOFTMAX;
  default: return WL_OP_ELEMENTWISE;
  }
}

/* Whether a layer's backward passes read the layer's own input (x) or own output (y). */
static gboolean backward_reads_input(wl_layer_kind k)
{
  return k == WL_LAYER_CONV || k == WL_LAYER_FC || k == WL_LAYER_BATCHNORM ||
         k == WL_LAYER_MAXPOOL || k == WL_LAYER_LRN;
}

static gboolean backward_reads_output(wl_layer_kind k)
{
  return k == WL_LAYER_RELU || k == WL_LAYER_SIGMOID || k == WL_LAYER_TANH ||
         k == WL_LAYER_MAXPOOL || k == WL_LAYER_LRN || k == WL_LAYER_SOFTMAX;
}

static void set_cost(wl_op_cost *c, wl_op_kind kind, wl_pass pass, wl_precision prec,
                     uint64_t flops, uint64_t rd, uint64_t wr, uint64_t out_elems)
{
  memset(c, 0, sizeof(*c));
  c->kind = kind;
  c->pass = pass;
  c->precision = prec;
  c->flops = flops;
  c->bytes_read = rd;
  c->bytes_written = wr;
  c->out_elems = out_elems;
}

static void set_gemm(wl_op_cost *c, uint64_t m, uint64_t n, uint64_t k, uint64_t batch)
{
  c->gemm_m = m;
  c->gemm_n = n;
  c->gemm_k = k;
  c->gemm_batch = batch;
}

static void update_cost(uint64_t params, wl_precision prec, wl_optimizer opt, wl_op_cost *c)
{
  /* Per parameter: SGD w -= lr*g (2 FLOPs); momentum v = mu*v + g, w -= lr*v (4 FLOPs);
   * Adam m = b1*m + (1-b1)*g (3), v = b2*v + (1-b2)*g*g (4), two bias corrections (2),
   * sqrt, + eps, divide, * lr, subtract (5): 14 FLOPs. Weights and state are fp32; the
   * gradient is read at its own size; fp16/bf16 also write back the 16-bit working copy. */
  static const uint64_t flops_per[WL_OPT_COUNT] = {2, 4, 14};
  static const uint64_t state_words[WL_OPT_COUNT] = {0, 1, 2};
  uint64_t g = grad_elem_bytes(prec);
  uint64_t rd = params * (4 + g + 4 * state_words[opt]);
  uint64_t wr = params * (4 + 4 * state_words[opt]);
  if (prec == WL_PREC_FP16 || prec == WL_PREC_BF16)
    wr += params * 2;
  set_cost(c, WL_OP_UPDATE, WL_PASS_UPDATE, prec, params * flops_per[opt], rd, wr, params);
}

void wl_net_free(wl_net *net)
{
  if (net == NULL)
    return;
  g_free(net->layers);
  g_free(net->runs_backward);
  g_free(net);
}

/* Fills the forward and backward costs of layer i. */
static void layer_costs(wl_net *net, size_t i, const gboolean *requires_grad)
{
  const wl_model *m = net->model;
  const wl_spec *s = &g_array_index(m->specs, wl_spec, i);
  wl_layer *L = &net->layers[i];
  const wl_hparams *hp = &s->hp;
  const uint64_t N = net->batch;
  const uint64_t e = wl_precision_bytes(net->precision);
  const uint64_t wb = e; /* weights as read by the passes */
  const uint64_t gb = grad_elem_bytes(net->precision);
  const wl_precision prec = net->precision;
  const wl_op_kind ok = op_kind(s->kind);

  /* Input elements over all parents, for the whole batch. */
  uint64_t in = 0;
  for (int j = 0; j < s->n_parents; j++) {
    int p = s->parents[j];
    const wl_spec *ps = p >= 0 ? &g_array_index(m->specs, wl_spec, p) : NULL;
    in += N * (ps ? (uint64_t)ps->out_c * ps->out_h * ps->out_w
                  : (uint64_t)m->in_c * m->in_h * m->in_w);
  }
  const uint64_t out = N * s->out_c * s->out_h * s->out_w;
  const uint64_t P = s->params;

  L->out_elems = out;
  L->param_bytes = P * wb;
  L->grad_bytes = P * gb;
  L->has_pass[WL_PASS_BACKWARD_WEIGHTS] = P > 0;
  L->has_pass[WL_PASS_UPDATE] = P > 0;
  gboolean data_grad = FALSE;
  for (int j = 0; j < s->n_parents; j++)
    if (s->parents[j] >= 0 && requires_grad[s->parents[j]])
      data_grad = TRUE;
  L->has_pass[WL_PASS_BACKWARD_DATA] = data_grad;
  L->has_pass[WL_PASS_FORWARD] = TRUE;

  wl_op_cost *fw = &L->cost[WL_PASS_FORWARD];
  wl_op_cost *bd = &L->cost[WL_PASS_BACKWARD_DATA];
  wl_op_cost *bw = &L->cost[WL_PASS_BACKWARD_WEIGHTS];
  memset(fw, 0, sizeof(L->cost));

  switch (s->kind) {
  case WL_LAYER_CONV: {
    uint64_t G = hp->groups, Cg = s->in_c / G, Kg = hp->out / G, K = hp->out;
    uint64_t taps = hp->kh * (uint64_t)hp->kw;
    uint64_t P_Q = (uint64_t)s->out_h * s->out_w, H_W = (uint64_t)s->in_h * s->in_w;
    uint64_t valid = wl__valid_taps(s->in_h, s->out_h, hp->kh, hp->sh, hp->dh, s->pad_top) *
                     wl__valid_taps(s->in_w, s->out_w, hp->kw, hp->sw, hp->dw, s->pad_left);
    uint64_t bias = hp->bias ? out : 0;
    L->macs = out * Cg * taps;
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 2 * L->macs + bias, in * e + P * wb, out * e, out);
    set_gemm(fw, N * P_Q, Kg, Cg * taps, G);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 2 * N * K * Cg * valid, out * e + P * wb,
             in * e, in);
    set_gemm(bd, N * H_W, Cg, Kg * taps, G);
    set_cost(bw, ok, WL_PASS_BACKWARD_WEIGHTS, prec, 2 * N * K * Cg * valid + bias,
             out * e + in * e, P * gb, P);
    set_gemm(bw, Kg, Cg * taps, N * P_Q, G);
    for (int p = 0; p < 3; p++) {
      L->cost[p].kernel_h = hp->kh;
      L->cost[p].kernel_w = hp->kw;
      L->cost[p].stride = hp->sh;
    }
    break;
  }
  case WL_LAYER_FC: {
    uint64_t I = in / N, O = hp->out, bias = hp->bias ? out : 0;
    L->macs = N * I * O;
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 2 * L->macs + bias, in * e + P * wb, out * e, out);
    set_gemm(fw, N, O, I, 1);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 2 * N * I * O, out * e + P * wb, in * e, in);
    set_gemm(bd, N, I, O, 1);
    set_cost(bw, ok, WL_PASS_BACKWARD_WEIGHTS, prec, 2 * N * I * O + bias, out * e + in * e,
             P * gb, P);
    set_gemm(bw, O, I, N, 1);
    for (int p = 0; p < 3; p++)
      L->cost[p].kernel_h = L->cost[p].kernel_w = L->cost[p].stride = 1;
    break;
  }
  case WL_LAYER_MAXPOOL:
  case WL_LAYER_AVGPOOL:
  case WL_LAYER_GLOBALPOOL: {
    uint64_t window = s->kind == WL_LAYER_GLOBALPOOL ? (uint64_t)s->in_h * s->in_w
                                                      : (uint64_t)hp->kh * hp->kw;
    /* Forward: one comparison (max) or addition-and-scale (average) per window element. */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, out * window, in * e, out * e, out);
    if (s->kind == WL_LAYER_MAXPOOL)
      /* The gradient goes to the arg-max: one accumulation per output; reads x, y and dy. */
      set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, out, in * e + 2 * out * e, in * e, in);
    else
      /* dy is scaled once and accumulated into each input of the window. */
      set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, out * (window + 1), out * e, in * e, in);
    break;
  }
  case WL_LAYER_LRN: {
    uint64_t n = hp->lrn_size;
    /* Forward per element: sum of n squares (2n), k + alpha/n * sum (2), power (1), divide (1);
     * the scale is written out for backward. Backward per element: t = dy*y/scale (2), window
     * sum of t (n), x * sum * 2*alpha*beta/n (2), dy * scale^-beta (2), subtract (1). */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, out * (2 * n + 4), in * e, 2 * out * e, out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, out * (n + 7), 4 * out * e, in * e, in);
    break;
  }
  case WL_LAYER_BATCHNORM: {
    uint64_t C = s->out_c;
    /* Forward per element: mean (1), variance (3), normalize (2), scale and shift (2); two
     * sweeps over x. Backward-weights: sum dy (1) and sum dy*xhat (2) per element.
     * Backward-data recomputes those sums (3), xhat (2), and combines (5). */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 8 * out, 2 * in * e + P * wb, out * e + 2 * C * 4,
             out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 10 * out, 2 * (in + out) * e + P * wb,
             in * e, in);
    set_cost(bw, ok, WL_PASS_BACKWARD_WEIGHTS, prec, 3 * out, (in + out) * e, P * gb, P);
    fw->channels = bd->channels = bw->channels = (uint32_t)C;
    break;
  }
  case WL_LAYER_RELU:
  case WL_LAYER_SIGMOID:
  case WL_LAYER_TANH: {
    /* relu: max(x, 0) / select; sigmoid: negate, exp, add, reciprocal / (1-y)*y*dy;
     * tanh: exp, add, subtract, divide / (1-y*y)*dy. */
    uint64_t f = s->kind == WL_LAYER_RELU ? 1 : 4, b = s->kind == WL_LAYER_RELU ? 1 : 3;
    set_cost(fw, ok, WL_PASS_FORWARD, prec, f * out, in * e, out * e, out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, b * out, 2 * out * e, in * e, in);
    break;
  }
  case WL_LAYER_DROPOUT:
    /* Forward per element: a random number, a comparison, a scaled multiply; a one-byte mask
     * is written for backward. Backward: dy * mask * 1/(1-p) (2 per element). */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 3 * out, in * e, out * e + out, out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 2 * out, out * e + out, in * e, in);
    break;
  case WL_LAYER_CONCAT:
  case WL_LAYER_FLATTEN:
    /* Copies: no arithmetic, every byte read and written once each way. */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 0, in * e, out * e, out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 0, out * e, in * e, in);
    break;
  case WL_LAYER_ADD: {
    uint64_t k = (uint64_t)s->n_parents;
    set_cost(fw, ok, WL_PASS_FORWARD, prec, (k - 1) * out, in * e, out * e, out);
    /* The same gradient flows to every parent; one parent may alias dy, the others get a copy
     * (at least one copy, so a one-parent add is not free either). */
    uint64_t copies = k > 1 ? k - 1 : 1;
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, 0, out * e, copies * out * e, copies * out);
    break;
  }
  case WL_LAYER_SOFTMAX:
    /* Forward per element: max, subtract, exp, sum, divide (5); per sample: log of the label's
     * probability and the loss sum (2). Backward: subtract one at the label (1 per sample) and
     * scale by 1/batch (1 per element). */
    set_cost(fw, ok, WL_PASS_FORWARD, prec, 5 * out + 2 * N, in * e, out * e, out);
    set_cost(bd, ok, WL_PASS_BACKWARD_DATA, prec, out + N, out * e, in * e, in);
    break;
  default:
    g_assert_not_reached();
  }

  /* A layer read by several children receives one gradient from each and sums them before its
   * own backward (the first backward pass it runs). */
  if (requires_grad[i] && s->n_children > 1) {
    wl_op_cost *c = data_grad ? bd : bw;
    uint64_t k = (uint64_t)s->n_children;
    c->flops += (k - 1) * out;
    c->bytes_read += k * out * e;
    c->bytes_written += out * e;
  }

  if (!L->has_pass[WL_PASS_BACKWARD_DATA])
    memset(bd, 0, sizeof(*bd)), bd->kind = ok, bd->pass = WL_PASS_BACKWARD_DATA;
  if (!L->has_pass[WL_PASS_BACKWARD_WEIGHTS])
    memset(bw, 0, sizeof(*bw)), bw->kind = ok, bw->pass = WL_PASS_BACKWARD_WEIGHTS;
  if (P > 0)
    update_cost(P, prec, WL_OPT_SGD_MOMENTUM, &L->cost[WL_PASS_UPDATE]);
  else
    L->cost[WL_PASS_UPDATE].kind = WL_OP_UPDATE, L->cost[WL_PASS_UPDATE].pass = WL_PASS_UPDATE;
  net->runs_backward[i] = L->has_pass[WL_PASS_BACKWARD_DATA] || P > 0;
}

wl_net *wl_net_new(const wl_model *m, uint32_t batch, wl_precision precision, GError **error)
{
  g_return_val_if_fail(m != NULL, NULL);
  if (!m->finished) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "model '%s' was not finished", m->name);
    return NULL;
  }
  if (batch == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "batch size must be at least 1");
    return NULL;
  }
  if ((unsigned)precision >= WL_PREC_COUNT) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "unknown precision %d", (int)precision);
    return NULL;
  }
  size_t n = m->specs->len;
  /* Guard the 64-bit counts: the elements a layer reads and writes, and its output elements
   * times its work per output element, must stay well inside 2^64. The work per element is a
   * kernel window over the input channels (convolutions, pools), the whole input sample (fc),
   * the input plane (global pooling), the LRN window, or one term per parent and per child
   * (sums, gradient sums). */
  for (size_t i = 0; i < n; i++) {
    const wl_spec *s = &g_array_index(m->specs, wl_spec, i);
    double out_elems = (double)batch * s->out_c * s->out_h * s->out_w;
    double in_elems = (double)batch * s->in_c * s->in_h * s->in_w * s->n_parents;
    double fan = (double)s->in_c * s->hp.kh * s->hp.kw;
    if (s->kind == WL_LAYER_FC)
      fan = (double)s->in_c * s->in_h * s->in_w;
    else if (s->kind == WL_LAYER_GLOBALPOOL)
      fan = (double)s->in_h * s->in_w;
    else if (s->kind == WL_LAYER_LRN)
      fan = MAX(fan, (double)s->hp.lrn_size + 7);
    fan = MAX(fan, (double)s->n_parents + s->n_children);
    double work = out_elems * fan * 16.0;
    if (MAX(out_elems, in_elems) > 1e15 || work > 1e18 || s->params > (uint64_t)1e15) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "model '%s': layer '%s' at batch %u is too large to count exactly", m->name,
                  s->name, batch);
      return NULL;
    }
  }
  wl_net *net = g_new0(wl_net, 1);
  net->model = m;
  net->batch = batch;
  net->precision = precision;
  net->n = n;
  net->layers = g_new0(wl_layer, n);
  net->runs_backward = g_new0(gboolean, n);
  g_autofree gboolean *requires_grad = g_new0(gboolean, n);
  for (size_t i = 0; i < n; i++) {
    const wl_spec *s = &g_array_index(m->specs, wl_spec, i);
    wl_layer *L = &net->layers[i];
    L->name = s->name;
    L->kind = s->kind;
    L->hp = &s->hp;
    L->n_parents = s->n_parents;
    L->parents = s->parents;
    L->n_children = s->n_children;
    L->in_c = s->in_c, L->in_h = s->in_h, L->in_w = s->in_w;
    L->out_c = s->out_c, L->out_h = s->out_h, L->out_w = s->out_w;
    L->params = s->params;
    requires_grad[i] = s->params > 0;
    for (int j = 0; j < s->n_parents; j++)
      if (s->parents[j] >= 0 && requires_grad[s->parents[j]])
        requires_grad[i] = TRUE;
    layer_costs(net, i, requires_grad);
  }

  /* Activations saved for backward: a layer's output is kept when its own backward reads it
   * or a child's backward reads it as input; extras are the LRN scale, the dropout mask and
   * the batch-norm per-channel mean and inverse deviation (fp32). */
  const uint64_t e = wl_precision_bytes(precision);
  g_autofree gboolean *read_by_child = g_new0(gboolean, n);
  for (size_t k = 0; k < n; k++) {
    const wl_spec *c = &g_array_index(m->specs, wl_spec, k);
    if (net->runs_backward[k] && backward_reads_input(c->kind))
      for (int j = 0; j < c->n_parents; j++)
        if (c->parents[j] >= 0)
          read_by_child[c->parents[j]] = TRUE;
  }
  for (size_t i = 0; i < n; i++) {
    const wl_spec *s = &g_array_index(m->specs, wl_spec, i);
    wl_layer *L = &net->layers[i];
    gboolean keep =
        (net->runs_backward[i] && backward_reads_output(s->kind)) || read_by_child[i];
    uint64_t bytes = keep ? L->out_elems * e : 0;
    if (net->runs_backward[i]) {
      if (s->kind == WL_LAYER_LRN)
        bytes += L->out_elems * e;
      else if (s->kind == WL_LAYER_DROPOUT)
        bytes += L->out_elems;
      else if (s->kind == WL_LAYER_BATCHNORM)
        bytes += 2 * (uint64_t)s->out_c * 4;
    }
    L->saved_bytes = bytes;
  }
  return net;
}

const wl_model *wl_net_model(const wl_net *net) { return net->model; }
uint32_t wl_net_batch(const wl_net *net) { return net->batch; }
wl_precision wl_net_precision(const wl_net *net) { return net->precision; }
size_t wl_net_n_layers(const wl_net *net) { return net->n; }

uint64_t wl_layer_second_params(const wl_layer *l)
{
  if (l->params == 0)
    return 0;
  if (l->kind == WL_LAYER_BATCHNORM)
    return l->params / 2;   /* shift and scale, C each */
  if ((l->kind == WL_LAYER_CONV || l->kind == WL_LAYER_FC) && l->hp && l->hp->bias)
    return l->hp->out;
  return 0;
}

const wl_layer *wl_net_layer(const wl_net *net, size_t i)
{
  g_return_val_if_fail(i < net->n, NULL);
  return &net->layers[i];
}

void wl_net_update_cost(const wl_net *net, size_t i, wl_optimizer opt, wl_op_cost *out)
{
  g_return_if_fail(i < net->n && (unsigned)opt < WL_OPT_COUNT);
  memset(out, 0, sizeof(*out));
  out->kind = WL_OP_UPDATE;
  out->pass = WL_PASS_UPDATE;
  out->precision = net->precision;
  if (net->layers[i].params > 0)
    update_cost(net->layers[i].params, net->precision, opt, out);
}

void wl_net_totals(const wl_net *net, wl_totals *t)
{
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < net->n; i++) {
    const wl_layer *L = &net->layers[i];
    const wl_op_cost *c = L->cost;
    t->params += L->params;
    t->macs += L->macs;
    t->forward_flops += c[WL_PASS_FORWARD].flops;
    t->forward_bytes += c[WL_PASS_FORWARD].bytes_read + c[WL_PASS_FORWARD].bytes_written;
    for (int p = WL_PASS_BACKWARD_DATA; p <= WL_PASS_BACKWARD_WEIGHTS; p++) {
      t->backward_flops += c[p].flops;
      t->backward_bytes += c[p].bytes_read + c[p].bytes_written;
    }
    t->saved_bytes += L->saved_bytes;
    t->param_bytes += L->param_bytes;
    t->grad_bytes += L->grad_bytes;
  }
}

void wl_net_sum_range(const wl_net *net, size_t first, size_t last, wl_pass pass,
                      wl_op_cost *out)
{
  g_return_if_fail(first <= last && last < net->n && (unsigned)pass < WL_PASS_COUNT);
  memset(out, 0, sizeof(*out));
  const wl_op_cost *biggest = &net->layers[first].cost[pass];
  for (size_t i = first; i <= last; i++) {
    const wl_op_cost *c = &net->layers[i].cost[pass];
    out->flops += c->flops;
    out->bytes_read += c->bytes_read;
    out->bytes_written += c->bytes_written;
    out->out_elems += c->out_elems;
    if (c->flops > biggest->flops)
      biggest = c;
  }
  out->kind = biggest->kind;
  out->pass = pass;
  out->precision = net->precision;
  out->gemm_m = biggest->gemm_m;
  out->gemm_n = biggest->gemm_n;
  out->gemm_k = biggest->gemm_k;
  out->gemm_batch = biggest->gemm_batch;
  out->kernel_h = biggest->kernel_h;
  out->kernel_w = biggest->kernel_w;
  out->stride = biggest->stride;
}

uint64_t wl_net_input_bytes_per_sample(const wl_net *net)
{
  const wl_model *m = net->model;
  return (uint64_t)m->in_c * m->in_h * m->in_w * wl_precision_bytes(net->precision);
}

void wl_net_memory(const wl_net *net, wl_optimizer opt, wl_memory *mem)
{
  g_return_if_fail((unsigned)opt < WL_OPT_COUNT);
  static const uint64_t state_bytes[WL_OPT_COUNT] = {0, 4, 8};
  memset(mem, 0, sizeof(*mem));
  const uint64_t e = wl_precision_bytes(net->precision);
  uint64_t params = 0;
  mem->activations_bytes = net->batch * wl_net_input_bytes_per_sample(net);
  for (size_t i = 0; i < net->n; i++) {
    const wl_layer *L = &net->layers[i];
    params += L->params;
    mem->activations_bytes += L->saved_bytes;
    if (net->runs_backward[i]) {
      /* While layer i runs backward, dy (its output's size) and dx (its input's) are live. */
      uint64_t in = L->has_pass[WL_PASS_BACKWARD_DATA] ? L->cost[WL_PASS_BACKWARD_DATA].out_elems
                                                       : 0;
      uint64_t ws = (L->out_elems + in) * e;
      if (ws > mem->workspace_bytes)
        mem->workspace_bytes = ws;
    }
  }
  mem->weights_bytes = params * weight_store_bytes(net->precision);
  mem->gradients_bytes = params * grad_elem_bytes(net->precision);
  mem->optimizer_bytes = params * state_bytes[opt];
  mem->total_bytes = mem->weights_bytes + mem->gradients_bytes + mem->optimizer_bytes +
                     mem->activations_bytes + mem->workspace_bytes;
}
