/* The layer graph: building a model, checking it, ordering its layers topologically and
 * inferring shapes. Costs are in wl_cost.c; file formats in wl_json.c and wl_paleo.c. */
#include "wl_internal.h"
#include "util.h"

#include <string.h>

static const char *const kind_names[WL_LAYER_KIND_COUNT] = {
    "conv",    "fc",   "maxpool", "avgpool", "globalavgpool", "lrn",     "batchnorm", "relu",
    "sigmoid", "tanh", "dropout", "concat",  "add",           "flatten", "softmax"};

const char *wl_layer_kind_name(wl_layer_kind k)
{
  return (unsigned)k < WL_LAYER_KIND_COUNT ? kind_names[k] : "?";
}

int wl_layer_kind_parse(const char *name)
{
  for (int i = 0; name && i < WL_LAYER_KIND_COUNT; i++)
    if (strcmp(name, kind_names[i]) == 0)
      return i;
  return -1;
}

wl_hparams wl_hparams_default(void)
{
  wl_hparams hp = {0};
  hp.kh = hp.kw = hp.sh = hp.sw = hp.dh = hp.dw = hp.groups = 1;
  hp.bias = TRUE;
  hp.lrn_size = 5;
  hp.drop_rate = 0.5;
  return hp;
}

static void spec_clear(gpointer p)
{
  wl_spec *s = p;
  g_free(s->name);
  g_free(s->parents);
}

wl_model *wl_model_new(const char *name, uint32_t channels, uint32_t height, uint32_t width)
{
  wl_model *m = g_new0(wl_model, 1);
  m->name = g_strdup(name);
  m->in_c = channels;
  m->in_h = height;
  m->in_w = width;
  m->specs = g_array_new(FALSE, TRUE, sizeof(wl_spec));
  g_array_set_clear_func(m->specs, spec_clear);
  return m;
}

void wl_model_free(wl_model *m)
{
  if (m == NULL)
    return;
  g_free(m->name);
  g_free(m->source);
  g_array_unref(m->specs);
  g_free(m);
}

int wl_model_add(wl_model *m, const char *name, wl_layer_kind kind, const wl_hparams *hp,
                 const int *parents, int n_parents)
{
  g_return_val_if_fail(m != NULL && name != NULL && n_parents >= 0, -1);
  wl_spec s = {0};
  s.name = g_strdup(name);
  s.kind = kind;
  s.hp = hp ? *hp : wl_hparams_default();
  s.n_parents = n_parents;
  s.parents = g_new(int, n_parents > 0 ? n_parents : 1);
  if (n_parents > 0)
    memcpy(s.parents, parents, sizeof(int) * (gsize)n_parents);
  g_array_append_val(m->specs, s);
  m->finished = FALSE;
  return (int)m->specs->len - 1;
}

const char *wl_model_name(const wl_model *m) { return m->name; }
size_t wl_model_n_layers(const wl_model *m) { return m->specs->len; }

void wl_model_input_shape(const wl_model *m, uint32_t *c, uint32_t *h, uint32_t *w)
{
  *c = m->in_c;
  *h = m->in_h;
  *w = m->in_w;
}

/* "FILE:LINE: layer 'x': " or "model 'm': layer 'x': " prefix for messages about a layer. */
static gboolean layer_error(const wl_model *m, const wl_spec *s, GError **error, const char *fmt,
                            ...) G_GNUC_PRINTF(4, 5);
static gboolean layer_error(const wl_model *m, const wl_spec *s, GError **error, const char *fmt,
                            ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (m->source && s->line > 0)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d: layer '%s': %s", m->source, s->line,
                s->name, msg);
  else if (m->source)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: layer '%s': %s", m->source, s->name, msg);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "model '%s': layer '%s': %s", m->name, s->name,
                msg);
  return FALSE;
}

uint32_t wl__out_size(uint32_t in, uint32_t k, uint32_t s, uint32_t pad, uint32_t dil,
                      gboolean same, gboolean ceil_mode, uint32_t *pad_before)
{
  uint64_t span = (uint64_t)dil * (k - 1) + 1; /* extent of the dilated kernel, in elements */
  if (same) {
    /* TensorFlow: out = ceil(in / s); the total padding is split with the extra element after. */
    uint64_t out = ((uint64_t)in + s - 1) / s;
    uint64_t need = (out - 1) * s + span;
    uint64_t total = need > in ? need - in : 0;
    if (total / 2 > UINT32_MAX)
      return 0;
    *pad_before = (uint32_t)(total / 2);
    return (uint32_t)out;
  }
  *pad_before = pad;
  uint64_t padded = (uint64_t)in + 2 * (uint64_t)pad;
  if (padded < span)
    return 0;
  uint64_t room = padded - span;
  uint64_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
  /* PyTorch: with ceil_mode the last window must start inside the input or left padding. */
  if (ceil_mode && out > 1 && (out - 1) * s >= (uint64_t)in + pad)
    out--;
  return out > UINT32_MAX ? 0 : (uint32_t)out;
}

uint64_t wl__valid_taps(uint32_t in, uint32_t out, uint32_t k, uint32_t s, uint32_t dil,
                        uint32_t pad_before)
{
  /* Counted along the shorter of the two axes, each step in O(1): a tall output with a small
   * kernel (or the reverse) would otherwise take billions of steps. */
  uint64_t total = 0;
  if (k < out) {
    /* For tap r the positions p with 0 <= p*s + r*dil - pad < in form one interval. */
    for (uint32_t r = 0; r < k; r++) {
      __int128 off = (__int128)r * dil - pad_before; /* input row of tap r at p = 0 */
      __int128 hi_row = (__int128)in - 1 - off;      /* p*s <= hi_row */
      if (hi_row < 0)
        continue;
      __int128 p_lo = off >= 0 ? 0 : (-off + s - 1) / s;
      __int128 p_hi = hi_row / s;
      if (p_hi > (__int128)out - 1)
        p_hi = (__int128)out - 1;
      if (p_hi >= p_lo)
        total += (uint64_t)(p_hi - p_lo + 1);
    }
    return total;
  }
  /* For output position p the taps r with 0 <= p*s + r*dil - pad < in form one interval. */
  for (uint32_t p = 0; p < out; p++) {
    int64_t start = (int64_t)p * s - pad_before; /* input row of tap 0 */
    int64_t r_lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t r_hi = ((int64_t)in - 1 - start) < 0 ? -1 : ((int64_t)in - 1 - start) / dil;
    if (r_hi > (int64_t)k - 1)
      r_hi = (int64_t)k - 1;
    if (r_hi >= r_lo)
      total += (uint64_t)(r_hi - r_lo + 1);
  }
  return total;
}

/* Infers the output shape and parameter count of layer s, whose parents are already done. */
static gboolean infer(const wl_model *m, wl_spec *s, GError **error)
{
  const wl_spec *specs = (const wl_spec *)m->specs->data;
  uint32_t c = m->in_c, h = m->in_h, w = m->in_w;
  if (s->n_parents == 0)
    return layer_error(m, s, error, "has no parents");
  if (s->parents[0] >= 0) {
    const wl_spec *p = &specs[s->parents[0]];
    c = p->out_c, h = p->out_h, w = p->out_w;
  }
  if (s->kind == WL_LAYER_CONCAT || s->kind == WL_LAYER_ADD) {
    uint64_t sum_c = c;
    for (int i = 1; i < s->n_parents; i++) {
      int pi = s->parents[i];
      uint32_t pc = pi >= 0 ? specs[pi].out_c : m->in_c;
      uint32_t ph = pi >= 0 ? specs[pi].out_h : m->in_h;
      uint32_t pw = pi >= 0 ? specs[pi].out_w : m->in_w;
      const char *pname = pi >= 0 ? specs[pi].name : "input";
      if (ph != h || pw != w || (s->kind == WL_LAYER_ADD && pc != c))
        return layer_error(m, s, error,
                           "parent '%s' is %ux%ux%u but the first parent is %ux%ux%u (%s needs %s)",
                           pname, pc, ph, pw, c, h, w, wl_layer_kind_name(s->kind),
                           s->kind == WL_LAYER_ADD ? "equal shapes" : "equal heights and widths");
      sum_c += pc;
    }
    if (s->kind == WL_LAYER_CONCAT) {
      if (sum_c > UINT32_MAX)
        return layer_error(m, s, error, "too many channels");
      c = (uint32_t)sum_c;
    }
  } else if (s->n_parents != 1) {
    return layer_error(m, s, error, "a %s layer takes one parent, not %d",
                       wl_layer_kind_name(s->kind), s->n_parents);
  }
  s->in_c = c, s->in_h = h, s->in_w = w;
  s->out_c = c, s->out_h = h, s->out_w = w;
  s->pad_top = s->pad_left = 0;
  s->params = 0;
  const wl_hparams *hp = &s->hp;

  switch (s->kind) {
  case WL_LAYER_CONV:
  case WL_LAYER_MAXPOOL:
  case WL_LAYER_AVGPOOL: {
    gboolean conv = s->kind == WL_LAYER_CONV;
    if (hp->kh == 0 || hp->kw == 0 || hp->sh == 0 || hp->sw == 0 || hp->dh == 0 || hp->dw == 0)
      return layer_error(m, s, error, "kernel, stride and dilation must be at least 1");
    if (conv) {
      if (hp->out == 0 || hp->groups == 0)
        return layer_error(m, s, error, "needs at least one output channel and one group");
      if (c % hp->groups != 0 || hp->out % hp->groups != 0)
        return layer_error(m, s, error,
                           "%u groups do not divide %u input channels and %u output channels",
                           hp->groups, c, hp->out);
    }
    uint32_t dh = conv ? hp->dh : 1, dw = conv ? hp->dw : 1;
    gboolean ceil_mode = !conv && hp->ceil_mode;
    uint32_t oh = wl__out_size(h, hp->kh, hp->sh, hp->ph, dh, hp->pad_same, ceil_mode, &s->pad_top);
    uint32_t ow = wl__out_size(w, hp->kw, hp->sw, hp->pw, dw, hp->pad_same, ceil_mode, &s->pad_left);
    if (oh == 0 || ow == 0) {
      /* Zero also means a size that 32 bits cannot hold: say which. */
      gboolean fits = hp->pad_same ||
                      ((uint64_t)h + 2 * (uint64_t)hp->ph >= (uint64_t)dh * (hp->kh - 1) + 1 &&
                       (uint64_t)w + 2 * (uint64_t)hp->pw >= (uint64_t)dw * (hp->kw - 1) + 1);
      if (fits)
        return layer_error(m, s, error, "the output or padding of a %ux%u kernel (dilation %ux%u) "
                           "on a %ux%u input passes %u", hp->kh, hp->kw, dh, dw, h, w, UINT32_MAX);
      return layer_error(m, s, error, "a %ux%u kernel does not fit its %ux%u input (padding %u,%u)",
                         hp->kh, hp->kw, h, w, hp->ph, hp->pw);
    }
    s->out_h = oh, s->out_w = ow;
    if (conv) {
      s->out_c = hp->out;
      s->params = (uint64_t)hp->out * (c / hp->groups) * hp->kh * hp->kw + (hp->bias ? hp->out : 0);
    }
    break;
  }
  case WL_LAYER_FC:
    if (hp->out == 0)
      return layer_error(m, s, error, "needs at least one output feature");
    s->out_c = hp->out, s->out_h = 1, s->out_w = 1;
    {
      /* Counted in 128 bits: C*H*W*out can pass 2^64. A count that large saturates, and
       * wl_net_new() refuses it as too large to count exactly. */
      unsigned __int128 params = (unsigned __int128)c * h * w * hp->out + (hp->bias ? hp->out : 0);
      s->params = params > UINT64_MAX ? UINT64_MAX : (uint64_t)params;
    }
    break;
  case WL_LAYER_GLOBALPOOL:
  case WL_LAYER_FLATTEN:
    if (s->kind == WL_LAYER_FLATTEN) {
      unsigned __int128 elems = (unsigned __int128)c * h * w;
      if (elems > UINT32_MAX)
        return layer_error(m, s, error, "flattens %ux%ux%u, more than %u elements per sample",
                           c, h, w, UINT32_MAX);
      s->out_c = (uint32_t)elems;
    }
    s->out_h = 1, s->out_w = 1;
    break;
  case WL_LAYER_LRN:
    if (hp->lrn_size == 0)
      return layer_error(m, s, error, "LRN size must be at least 1");
    break;
  case WL_LAYER_BATCHNORM:
    s->params = 2 * (uint64_t)c; /* scale and shift; running statistics are not trained */
    break;
  case WL_LAYER_DROPOUT:
    if (!(hp->drop_rate >= 0 && hp->drop_rate < 1))
      return layer_error(m, s, error, "dropout rate %g is not in [0, 1)", hp->drop_rate);
    break;
  default:
    break;
  }
  return TRUE;
}

/* Finds a layer on a cycle among the layers not yet ordered (done[i] FALSE). */
static int cycle_member(const wl_model *m, const gboolean *done)
{
  const wl_spec *specs = (const wl_spec *)m->specs->data;
  guint n = m->specs->len;
  int cur = -1;
  for (guint i = 0; i < n && cur < 0; i++)
    if (!done[i])
      cur = (int)i;
  /* Walking to a pending parent n times must land on a cycle. */
  for (guint step = 0; step < n; step++) {
    const wl_spec *s = &specs[cur];
    for (int j = 0; j < s->n_parents; j++)
      if (s->parents[j] >= 0 && !done[s->parents[j]]) {
        cur = s->parents[j];
        break;
      }
  }
  return cur;
}

gboolean wl_model_finish(wl_model *m, GError **error)
{
  guint n = m->specs->len;
  wl_spec *specs = (wl_spec *)m->specs->data;
  if (n == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: model has no layers",
                m->source ? m->source : m->name);
    return FALSE;
  }
  if (m->in_c == 0 || m->in_h == 0 || m->in_w == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: input shape %ux%ux%u has a zero dimension",
                m->source ? m->source : m->name, m->in_c, m->in_h, m->in_w);
    return FALSE;
  }
  g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < n; i++) {
    if (strcmp(specs[i].name, "input") == 0)
      return layer_error(m, &specs[i], error, "the name 'input' is reserved for the network input");
    if (!g_hash_table_insert(names, specs[i].name, &specs[i]))
      return layer_error(m, &specs[i], error, "a layer of this name is already defined");
    for (int j = 0; j < specs[i].n_parents; j++)
      if (specs[i].parents[j] < -1 || specs[i].parents[j] >= (int)n)
        return layer_error(m, &specs[i], error, "parent index %d out of range",
                           specs[i].parents[j]);
  }

  /* Kahn's algorithm, always taking the earliest declared ready layer so the order is the
   * declaration order whenever that order is already topological. The ready layers wait in a
   * binary min-heap and each layer's children are listed once (CSR), so this is n log n: a scan
   * of every layer per placed layer made 100 000 layers take minutes. */
  g_autofree gboolean *done = g_new0(gboolean, n);
  g_autofree int *order = g_new(int, n);
  g_autofree int *pending = g_new0(int, n);
  g_autofree guint *first_child = g_new0(guint, n + 1);
  for (guint i = 0; i < n; i++)
    for (int j = 0; j < specs[i].n_parents; j++)
      if (specs[i].parents[j] >= 0) {
        pending[i]++;
        first_child[specs[i].parents[j] + 1]++;
      }
  for (guint i = 0; i < n; i++)
    first_child[i + 1] += first_child[i];
  g_autofree int *children = g_new(int, first_child[n] + 1);
  g_autofree guint *fill = g_memdup2(first_child, n * sizeof(guint));
  for (guint i = 0; i < n; i++)
    for (int j = 0; j < specs[i].n_parents; j++)
      if (specs[i].parents[j] >= 0)
        children[fill[specs[i].parents[j]]++] = (int)i;
  g_autofree int *heap = g_new(int, n);
  guint heap_len = 0;
  for (guint i = 0; i < n; i++)
    if (pending[i] == 0)
      heap[heap_len++] = (int)i;   /* increasing: already a heap */
  guint placed = 0;
  while (placed < n) {
    if (heap_len == 0) {
      int c = cycle_member(m, done);
      return layer_error(m, &specs[c], error, "is part of a cycle of parents");
    }
    int i = heap[0];
    /* Pop the smallest: move the last to the root and sift it down. */
    int last = heap[--heap_len];
    for (guint h = 0;;) {
      guint c = 2 * h + 1;
      if (c >= heap_len) {
        if (heap_len)
          heap[h] = last;
        break;
      }
      if (c + 1 < heap_len && heap[c + 1] < heap[c])
        c++;
      if (last <= heap[c]) {
        heap[h] = last;
        break;
      }
      heap[h] = heap[c];
      h = c;
    }
    done[i] = TRUE;
    order[placed++] = i;
    for (guint e = first_child[i]; e < first_child[i + 1]; e++) {
      int k = children[e];
      if (--pending[k] > 0)
        continue;
      /* Push k and sift it up. */
      guint h = heap_len++;
      while (h > 0 && heap[(h - 1) / 2] > k) {
        heap[h] = heap[(h - 1) / 2];
        h = (h - 1) / 2;
      }
      heap[h] = k;
    }
  }

  /* Reorder and renumber the parents. */
  g_autofree int *rank = g_new(int, n);
  for (guint r = 0; r < n; r++)
    rank[order[r]] = (int)r;
  GArray *sorted = g_array_sized_new(FALSE, TRUE, sizeof(wl_spec), n);
  g_array_set_clear_func(sorted, spec_clear);
  for (guint r = 0; r < n; r++) {
    wl_spec s = specs[order[r]];
    for (int j = 0; j < s.n_parents; j++)
      if (s.parents[j] >= 0)
        s.parents[j] = rank[s.parents[j]];
    g_array_append_val(sorted, s);
  }
  g_array_set_clear_func(m->specs, NULL);
  g_array_unref(m->specs);
  m->specs = sorted;
  specs = (wl_spec *)sorted->data;

  for (guint i = 0; i < n; i++)
    specs[i].n_children = 0;
  for (guint i = 0; i < n; i++) {
    if (!infer(m, &specs[i], error))
      return FALSE;
    for (int j = 0; j < specs[i].n_parents; j++)
      if (specs[i].parents[j] >= 0)
        specs[specs[i].parents[j]].n_children++;
  }
  m->finished = TRUE;
  return TRUE;
}

int wl__line_of(const char *text, const char *hit, int *col)
{
  int line = 1;
  const char *start = text;   /* of hit's line */
  for (const char *p = text; p < hit; p++)
    if (*p == '\n')
      line++, start = p + 1;
  if (col)
    *col = (int)(hit - start) + 1;
  return line;
}

static const char *skip_back_space(const char *text, const char *p)
{
  while (p > text && g_ascii_isspace(p[-1]))
    p--;
  return p;
}

int wl__find_line(const char *text, const char *needle)
{
  if (text == NULL)
    return 0;
  g_autofree char *quoted = g_strdup_printf("\"%s\"", needle);
  size_t qlen = strlen(quoted);
  const char *first = strstr(text, quoted);
  /* Prefer where the string defines something: an object key ("conv1": {...}, Paleo) or the
   * value of a "name" key ("name": "conv1", our format), over a mention in a parent list. */
  for (const char *hit = first; hit; hit = strstr(hit + 1, quoted)) {
    const char *after = hit + qlen;
    while (*after && g_ascii_isspace(*after))
      after++;
    if (*after == ':')
      return wl__line_of(text, hit, NULL);
    const char *before = skip_back_space(text, hit);
    if (before > text && before[-1] == ':') {
      before = skip_back_space(text, before - 1);
      if (before - text >= 6 && strncmp(before - 6, "\"name\"", 6) == 0)
        return wl__line_of(text, hit, NULL);
    }
  }
  return first ? wl__line_of(text, first, NULL) : 0;
}
