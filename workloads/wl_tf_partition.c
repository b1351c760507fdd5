/* Which transformer blocks each pipeline stage holds (see wl_transformer.h, "Pipeline
 * partition"): the default spread, an explicit list of first blocks (--split) and
 * Megatron-Core's layout string (--pp-layout). Sources: docs/workloads.md ("Uneven
 * pipelines"). */
#include "wl_transformer.h"

#include "util.h"

#include <string.h>

/* The longest layout string once its repeats are expanded: one letter per layer and stage
 * boundary, far above any real model. */
#define LAYOUT_MAX_CHARS (1u << 20)

static gboolean part_error(GError **error, const char *option, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean part_error(GError **error, const char *option, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", option, msg);
  return FALSE;
}

/* Blocks spread over the stages: `units` (the blocks, plus the embedding and the loss when
 * they count as one block each) divided as evenly as they go, the remainder to the middle
 * stages first, so that the first and last hold fewer; then the first, then the last. */
static gboolean spread(uint32_t layers, const wl_tf_partition_opts *o, uint32_t *count,
                       GError **error)
{
  uint32_t nv = o->stages;
  uint32_t e = o->embedding_in_split ? 1 : 0, l = o->loss_in_split ? 1 : 0;
  uint64_t units = (uint64_t)layers + e + l, base = units / nv, rem = units % nv;
  if (base == 0)
    return part_error(error, "--pp", "%u pipeline stages (--pp x --interleave) for %u blocks",
                      nv, layers);
  for (uint32_t v = 0; v < nv; v++)
    count[v] = (uint32_t)base;
  for (uint32_t v = 1; v + 1 < nv && rem > 0; v++, rem--)
    count[v]++;
  if (rem > 0)
    count[0]++, rem--;
  if (rem > 0)
    count[nv - 1]++, rem--;
  if ((e && count[0] == 0) || (l && count[nv - 1] == 0))
    return part_error(error, e && count[0] == 0 ? "--embedding-in-split" : "--loss-in-split",
                      "%u blocks leave no room for it on %u pipeline stages", layers, nv);
  count[0] -= e;
  count[nv - 1] -= l;
  return TRUE;
}

static gboolean from_split(uint32_t layers, const wl_tf_partition_opts *o, uint32_t *count,
                           GError **error)
{
  uint32_t nv = o->stages;
  if (o->n_split != (size_t)nv - 1)
    return part_error(error, "--split", "%zu first blocks given for %u pipeline stages "
                      "(--pp x --interleave) after the first: expected %u", o->n_split, nv,
                      nv - 1);
  int64_t prev = 0;
  for (uint32_t v = 0; v + 1 < nv; v++) {
    int64_t b = o->split[v];
    if (b <= prev || b >= (int64_t)layers)
      return part_error(error, "--split", "%" G_GINT64_FORMAT " is not after %" G_GINT64_FORMAT
                        " and before the %u blocks' end", b, prev, layers);
    count[v] = (uint32_t)(b - prev);
    prev = b;
  }
  count[nv - 1] = (uint32_t)((int64_t)layers - prev);
  return TRUE;
}

/* Appends the expansion of layout[*at..] up to the closing parenthesis (depth > 0) or the
 * end to `out`. */
static gboolean expand(const char *layout, size_t *at, int depth, GString *out, GError **error)
{
  while (layout[*at]) {
    char c = layout[*at];
    size_t start = out->len;
    if (c == ')') {
      if (depth == 0)
        return part_error(error, "--pp-layout", "')' at column %zu closes nothing", *at + 1);
      return TRUE;
    }
    (*at)++;
    if (c == ',' || c == ' ')
      continue;
    if (c == '(') {
      if (depth >= 16)
        return part_error(error, "--pp-layout", "parentheses nest too deep");
      if (!expand(layout, at, depth + 1, out, error))
        return FALSE;
      if (layout[*at] != ')')
        return part_error(error, "--pp-layout", "'(' is not closed");
      (*at)++;
    } else if (strchr("Etm|L", c)) {
      g_string_append_c(out, c);
    } else {
      return part_error(error, "--pp-layout", "'%c' at column %zu: expected E, t, m, L, |, "
                        "(...) or *N", c, *at);
    }
    if (layout[*at] == '*') {
      (*at)++;
      char *end = NULL;
      guint64 n = g_ascii_strtoull(layout + *at, &end, 10);
      if (end == layout + *at || n == 0 || n > LAYOUT_MAX_CHARS)
        return part_error(error, "--pp-layout", "'*' at column %zu needs a count from 1", *at);
      *at = (size_t)(end - layout);
      size_t len = out->len - start;
      if (len * n > LAYOUT_MAX_CHARS)
        return part_error(error, "--pp-layout", "the layout is too long once expanded");
      g_autofree char *item = g_strndup(out->str + start, len);
      for (guint64 i = 1; i < n; i++)
        g_string_append_len(out, item, (gssize)len);
    }
    if (out->len > LAYOUT_MAX_CHARS)
      return part_error(error, "--pp-layout", "the layout is too long once expanded");
  }
  return TRUE;
}

static gboolean from_layout(uint32_t layers, const wl_tf_partition_opts *o, uint32_t *count,
                            uint32_t *mtp_stage, GError **error)
{
  uint32_t nv = o->stages;
  size_t at = 0;
  g_autoptr(GString) flat = g_string_new(NULL);
  if (!expand(o->layout, &at, 0, flat, error))
    return FALSE;
  g_auto(GStrv) stages = g_strsplit(flat->str, "|", -1);
  if (g_strv_length(stages) != nv)
    return part_error(error, "--pp-layout", "%u stages for %u pipeline stages (--pp x "
                      "--interleave)", g_strv_length(stages), nv);
  uint64_t total = 0, mtp = 0;
  uint32_t last_block = 0;
  for (uint32_t v = 0; v < nv; v++) {
    uint32_t n = 0;
    for (const char *c = stages[v]; *c; c++) {
      if (*c == 't')
        n++, last_block = v;
      else if (*c == 'm') {
        /* Megatron-Core keeps the multi-token-prediction modules together on one stage. */
        if (mtp && *mtp_stage != v)
          return part_error(error, "--pp-layout", "multi-token-prediction modules (m) on "
                            "stages %u and %u: they go on one stage", *mtp_stage, v);
        *mtp_stage = v;
        mtp++;
      }
      else if (*c == 'E' && v != 0)
        return part_error(error, "--pp-layout", "the embedding (E) is on stage %u, not the "
                          "first", v);
      else if (*c == 'L' && v != nv - 1)
        return part_error(error, "--pp-layout", "the loss (L) is on stage %u, not the last", v);
    }
    count[v] = n;
    total += n;
  }
  if (total != layers)
    return part_error(error, "--pp-layout", "%" G_GUINT64_FORMAT " blocks (t) for a model of %u",
                      total, layers);
  if (mtp != o->mtp)
    return part_error(error, "--pp-layout", "%" G_GUINT64_FORMAT " multi-token-prediction "
                      "modules (m) for a model of %u (the spec's mtp=)", mtp, o->mtp);
  /* A module starts from the last block's output. */
  if (mtp && *mtp_stage < last_block)
    return part_error(error, "--pp-layout", "the multi-token-prediction modules (m) are on "
                      "stage %u, before the last block (t) on stage %u", *mtp_stage,
                      last_block);
  return TRUE;
}

gboolean wl_tf_partition(uint32_t layers, const wl_tf_partition_opts *o, uint32_t *first,
                         uint32_t *count, uint32_t *mtp_stage, GError **error)
{
  g_return_val_if_fail(o->stages > 0, FALSE);
  if (o->split && o->layout)
    return part_error(error, "--pp-layout", "give --split or --pp-layout, not both");
  uint32_t mtp_at = o->stages - 1;
  gboolean ok = o->layout  ? from_layout(layers, o, count, &mtp_at, error)
                : o->split ? from_split(layers, o, count, error)
                           : spread(layers, o, count, error);
  if (!ok)
    return FALSE;
  uint32_t next = 0;
  for (uint32_t v = 0; v < o->stages; v++) {
    first[v] = next;
    next += count[v];
  }
  g_assert(next == layers);
  if (mtp_stage)
    *mtp_stage = mtp_at;
  return TRUE;
}
