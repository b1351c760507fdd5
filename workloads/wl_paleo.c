/* Importer for Paleo's network files (the JSON files of Paleo's nets folder).
 *
 * Layout: {"name": ..., "layers": {NAME: {"type": T, "parents": [NAMES], ...}, ...}} with types
 * Input ("tensor": [N, H, W, C]), Convolution ("filter": [h, w, in, out], "strides":
 * [1, sh, sw, 1], "padding": "SAME"|"VALID", "activation_fn": "relu"|null (relu when absent),
 * "normalizer_fn": "batch_norm"), Pooling (max) and AvgPool ("ksize": [1, h, w, 1], "strides",
 * "padding"), Dropout ("dropout_keep_prob"), Concatenate ("dim": 3, channels), Elementwise
 * (sum), InnerProduct ("num_outputs"), Softmax, and Block: {"parents", "endpoint", "layers"}
 * whose inner layers are named BLOCK/NAME, take the block's parents when their own list is
 * empty, and are referred to from outside as BLOCK (meaning BLOCK/ENDPOINT) or BLOCK/NAME.
 * A convolution's normalizer and activation become layers NAME/bn and NAME/<activation>;
 * a reference to NAME means the last of them. Paleo's batch dimension is ignored: the batch
 * is chosen when the model is instantiated. */
#include "wl_internal.h"
#include "util.h"

#include <string.h>

typedef struct {
  char *name;           /* full Paleo name (BLOCK/NAME inside blocks) */
  char **parents;       /* full Paleo names of the parents */
  int head, tail;       /* first and last of our layers made from it; -1 for the Input layer */
  uint32_t expect_in;   /* input channels the filter declares (Convolution), 0 if none */
  int line;
} paleo_layer;

static void paleo_layer_clear(gpointer p)
{
  paleo_layer *l = p;
  g_free(l->name);
  g_strfreev(l->parents);
}

typedef struct {
  const char *source;
  wl_model *m;
  GArray *layers;           /* paleo_layer */
  GHashTable *by_name;      /* full name -> index into layers + 1 */
  GHashTable *endpoints;    /* block name -> full endpoint name (owned strings) */
  gboolean have_input;
  uint32_t in_c, in_h, in_w;
} importer;

static gboolean perr(const importer *im, const char *layer, int line, GError **error,
                     const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static gboolean perr(const importer *im, const char *layer, int line, GError **error,
                     const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *where = line > 0 ? g_strdup_printf("%s:%d", im->source, line)
                                    : g_strdup(im->source);
  if (layer)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: layer '%s': %s", where, layer, msg);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", where, msg);
  return FALSE;
}

/* Reads element `i` of an integer array member. */
static gboolean int_at(const importer *im, const char *layer, int line, JsonObject *o,
                       const char *key, guint len, guint i, uint32_t min, uint32_t *out,
                       GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL || !JSON_NODE_HOLDS_ARRAY(n) || json_array_get_length(json_node_get_array(n)) != len)
    return perr(im, layer, line, error, "%s: expected an array of %u whole numbers", key, len);
  JsonNode *e = json_array_get_element(json_node_get_array(n), i);
  if (JSON_NODE_TYPE(e) != JSON_NODE_VALUE || json_node_get_value_type(e) != G_TYPE_INT64 ||
      json_node_get_int(e) < (gint64)min || json_node_get_int(e) > (gint64)UINT32_MAX)
    return perr(im, layer, line, error, "%s: element %u is not a whole number of at least %u",
                key, i, min);
  *out = (uint32_t)json_node_get_int(e);
  return TRUE;
}

static gboolean padding_of(const importer *im, const char *layer, int line, JsonObject *o,
                           wl_hparams *hp, GError **error)
{
  const char *p = wl__json_string(o, "padding");
  if (p && g_ascii_strcasecmp(p, "SAME") == 0)
    hp->pad_same = TRUE;
  else if (p && g_ascii_strcasecmp(p, "VALID") == 0)
    hp->pad_same = FALSE;
  else
    return perr(im, layer, line, error, "padding: expected \"SAME\" or \"VALID\"");
  return TRUE;
}

/* Appends an activation layer NAME/<fn> after `x`; "relu" when the key is absent, none when
 * it is null. */
static gboolean add_activation(importer *im, const char *name, int line, JsonObject *o, int *x,
                               const char *dflt, GError **error)
{
  const char *fn = dflt;
  JsonNode *n = json_object_get_member(o, "activation_fn");
  if (n && JSON_NODE_HOLDS_NULL(n))
    fn = NULL;
  else if (n && JSON_NODE_TYPE(n) == JSON_NODE_VALUE &&
           json_node_get_value_type(n) == G_TYPE_STRING)
    fn = json_node_get_string(n);
  else if (n)
    return perr(im, name, line, error, "activation_fn: expected a name or null");
  if (fn == NULL)
    return TRUE;
  wl_layer_kind k;
  if (strcmp(fn, "relu") == 0)
    k = WL_LAYER_RELU;
  else if (strcmp(fn, "tanh") == 0)
    k = WL_LAYER_TANH;
  else if (strcmp(fn, "sigmoid") == 0)
    k = WL_LAYER_SIGMOID;
  else
    return perr(im, name, line, error, "activation_fn: unknown activation '%s'", fn);
  g_autofree char *an = g_strdup_printf("%s/%s", name, fn);
  *x = wl_model_add(im->m, an, k, NULL, x, 1);
  g_array_index(im->m->specs, wl_spec, *x).line = line;
  return TRUE;
}

static int add_spec(importer *im, const char *name, wl_layer_kind kind, const wl_hparams *hp,
                    int line)
{
  int i = wl_model_add(im->m, name, kind, hp, NULL, 0);
  g_array_index(im->m->specs, wl_spec, i).line = line;
  return i;
}

/* Translates one Paleo layer (not a Block) whose full name is `name`, defined at `line`. */
static gboolean import_layer(importer *im, const char *name, int line, JsonObject *o,
                             char **parents, GError **error)
{
  const char *type = wl__json_string(o, "type");
  if (type == NULL)
    return perr(im, name, line, error, "type: missing");
  paleo_layer pl = {g_strdup(name), g_strdupv(parents), -1, -1, 0, line};
  wl_hparams hp = wl_hparams_default();
  int x = -1;
  gboolean ok = TRUE;

  if (strcmp(type, "Input") == 0) {
    uint32_t c, h, w, n;
    if (im->have_input)
      ok = perr(im, name, line, error, "a second Input layer (only one network input is supported)");
    else
      ok = int_at(im, name, line, o, "tensor", 4, 0, 1, &n, error) &&
           int_at(im, name, line, o, "tensor", 4, 1, 1, &h, error) &&
           int_at(im, name, line, o, "tensor", 4, 2, 1, &w, error) &&
           int_at(im, name, line, o, "tensor", 4, 3, 1, &c, error);
    if (ok) {
      im->have_input = TRUE;
      im->in_c = c, im->in_h = h, im->in_w = w;
    }
  } else if (strcmp(type, "Convolution") == 0) {
    ok = int_at(im, name, line, o, "filter", 4, 0, 1, &hp.kh, error) &&
         int_at(im, name, line, o, "filter", 4, 1, 1, &hp.kw, error) &&
         int_at(im, name, line, o, "filter", 4, 2, 1, &pl.expect_in, error) &&
         int_at(im, name, line, o, "filter", 4, 3, 1, &hp.out, error) &&
         int_at(im, name, line, o, "strides", 4, 1, 1, &hp.sh, error) &&
         int_at(im, name, line, o, "strides", 4, 2, 1, &hp.sw, error) &&
         padding_of(im, name, line, o, &hp, error);
    const char *norm = wl__json_string(o, "normalizer_fn");
    if (ok && norm && strcmp(norm, "batch_norm") != 0)
      ok = perr(im, name, line, error, "normalizer_fn: unknown normalizer '%s'", norm);
    if (ok) {
      hp.bias = norm == NULL; /* batch normalization's shift replaces the bias */
      x = pl.head = add_spec(im, name, WL_LAYER_CONV, &hp, line);
      if (norm) {
        g_autofree char *bn = g_strdup_printf("%s/bn", name);
        x = wl_model_add(im->m, bn, WL_LAYER_BATCHNORM, NULL, &x, 1);
        g_array_index(im->m->specs, wl_spec, x).line = line;
      }
      ok = add_activation(im, name, line, o, &x, "relu", error);
    }
  } else if (strcmp(type, "Pooling") == 0 || strcmp(type, "AvgPool") == 0) {
    ok = int_at(im, name, line, o, "ksize", 4, 1, 1, &hp.kh, error) &&
         int_at(im, name, line, o, "ksize", 4, 2, 1, &hp.kw, error) &&
         int_at(im, name, line, o, "strides", 4, 1, 1, &hp.sh, error) &&
         int_at(im, name, line, o, "strides", 4, 2, 1, &hp.sw, error) &&
         padding_of(im, name, line, o, &hp, error);
    if (ok)
      x = pl.head = add_spec(im, name, type[0] == 'P' ? WL_LAYER_MAXPOOL : WL_LAYER_AVGPOOL, &hp,
                             line);
  } else if (strcmp(type, "Dropout") == 0) {
    double keep = 0.5;
    if (json_object_has_member(o, "dropout_keep_prob") &&
        !wl__json_number(o, "dropout_keep_prob", &keep))
      ok = perr(im, name, line, error, "dropout_keep_prob: expected a number");
    hp.drop_rate = 1.0 - keep;
    if (ok)
      x = pl.head = add_spec(im, name, WL_LAYER_DROPOUT, &hp, line);
  } else if (strcmp(type, "Concatenate") == 0) {
    double dim = 3;
    if (json_object_has_member(o, "dim") && !wl__json_number(o, "dim", &dim))
      dim = -1;
    if (dim != 3)
      ok = perr(im, name, line, error, "dim: only concatenation along channels (3) is supported");
    else
      x = pl.head = add_spec(im, name, WL_LAYER_CONCAT, &hp, line);
  } else if (strcmp(type, "Elementwise") == 0) {
    x = pl.head = add_spec(im, name, WL_LAYER_ADD, &hp, line);
  } else if (strcmp(type, "InnerProduct") == 0) {
    JsonNode *n = json_object_get_member(o, "num_outputs");
    if (n == NULL || JSON_NODE_TYPE(n) != JSON_NODE_VALUE ||
        json_node_get_value_type(n) != G_TYPE_INT64 || json_node_get_int(n) < 1 ||
        json_node_get_int(n) > UINT32_MAX)
      ok = perr(im, name, line, error, "num_outputs: expected a whole number of at least 1");
    else {
      hp.out = (uint32_t)json_node_get_int(n);
      x = pl.head = add_spec(im, name, WL_LAYER_FC, &hp, line);
      ok = add_activation(im, name, line, o, &x, NULL, error);
    }
  } else if (strcmp(type, "Softmax") == 0) {
    x = pl.head = add_spec(im, name, WL_LAYER_SOFTMAX, &hp, line);
  } else {
    ok = perr(im, name, line, error, "unknown layer type '%s'", type);
  }
  pl.tail = x;
  g_array_append_val(im->layers, pl);
  if (ok && g_hash_table_contains(im->by_name, name))
    ok = perr(im, name, line, error, "a layer of this name is already defined");
  if (ok)
    g_hash_table_insert(im->by_name, g_array_index(im->layers, paleo_layer, im->layers->len - 1).name,
                        GUINT_TO_POINTER(im->layers->len));
  return ok;
}

/* Deepest nesting whose member names matter: top object (1), "layers" (2), a layer (3), a
 * block's "layers" (4). */
#define KEY_DEPTH 4

/* Whether the key at `k` (`len` bytes, not NUL-terminated; NULL if none) is "layers". */
static gboolean is_layers(const char *k, gsize len)
{
  return k && len == 6 && strncmp(k, "layers", 6) == 0;
}

/* The line (1-based) of every layer's key, found in one pass over the text: a top-level layer
 * under its NAME, a block's inner layer under BLOCK/NAME. Searching the text once per layer
 * made the importer quadratic in the layers. The text has been parsed by json-glib already
 * and the model is read from json-glib's nodes alone: this walk only follows brackets, strings
 * and comments to number lines for messages (a layer it misses gets line 0: its messages name
 * the file only). The first definition of a name counts; names written with escapes are left
 * out. */
static GHashTable *key_lines(const char *text)
{
  GHashTable *lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  gboolean object[KEY_DEPTH + 1] = {FALSE}, want_key[KEY_DEPTH + 1] = {FALSE};
  const char *key[KEY_DEPTH + 1] = {NULL};
  gsize key_len[KEY_DEPTH + 1] = {0};
  int depth = 0, line = 1;
  for (const char *p = text; *p; p++) {
    switch (*p) {
    case '\n':
      line++;
      break;
    case '{':
    case '[':
      if (++depth <= KEY_DEPTH) {
        object[depth] = want_key[depth] = *p == '{';
        key[depth] = NULL;
      }
      break;
    case '}':
    case ']':
      if (depth > 0)
        depth--;
      break;
    case ',':
      if (depth >= 1 && depth <= KEY_DEPTH && object[depth])
        want_key[depth] = TRUE;
      break;
    case ':':
      if (depth >= 1 && depth <= KEY_DEPTH)
        want_key[depth] = FALSE;
      break;
    case '/': /* json-glib skips C and C++ comments */
      if (p[1] == '/') {
        while (p[1] && p[1] != '\n')
          p++;
      } else if (p[1] == '*') {
        for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
          line += *p == '\n';
        if (*p == '\0')
          return lines;
        p++;
      }
      break;
    case '"': {
      const char *v = ++p;
      gboolean escaped = FALSE;
      for (; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
          escaped = TRUE;
          p++;
        }
        line += *p == '\n';
      }
      if (*p == '\0')
        return lines;
      if (depth < 1 || depth > KEY_DEPTH || !want_key[depth])
        break;
      key[depth] = v;
      key_len[depth] = (gsize)(p - v);
      want_key[depth] = FALSE;
      /* A key of the top-level "layers" (depth 2), or of the "layers" of one of its members
       * (depth 4). */
      if (escaped || !is_layers(key[1], key_len[1]) ||
          !(depth == 2 || (depth == 4 && key[2] && is_layers(key[3], key_len[3]))))
        break;
      char *name = depth == 2 ? g_strndup(v, key_len[2])
                              : g_strdup_printf("%.*s/%.*s", (int)key_len[2], key[2],
                                                (int)key_len[4], v);
      if (g_hash_table_contains(lines, name))
        g_free(name);
      else
        g_hash_table_insert(lines, name, GINT_TO_POINTER(line));
      break;
    }
    default:
      break;
    }
  }
  return lines;
}

/* Parent names as written: a JSON array of strings. */
static char **read_parents(const importer *im, const char *name, int line, JsonObject *o,
                           GError **error)
{
  JsonNode *n = json_object_get_member(o, "parents");
  if (n == NULL || !JSON_NODE_HOLDS_ARRAY(n)) {
    perr(im, name, line, error, "parents: expected an array of layer names");
    return NULL;
  }
  JsonArray *a = json_node_get_array(n);
  guint len = json_array_get_length(a);
  char **out = g_new0(char *, len + 1);
  for (guint i = 0; i < len; i++) {
    JsonNode *e = json_array_get_element(a, i);
    if (JSON_NODE_TYPE(e) != JSON_NODE_VALUE || json_node_get_value_type(e) != G_TYPE_STRING) {
      g_strfreev(out);
      perr(im, name, line, error, "parents: expected names of layers");
      return NULL;
    }
    out[i] = g_strdup(json_node_get_string(e));
  }
  return out;
}

/* Follows a reference to a block (its endpoint) and returns our layer index: -1 for the input,
 * -2 if the name is unknown. */
static int resolve(const importer *im, const char *ref)
{
  const char *target = g_hash_table_lookup(im->endpoints, ref);
  if (target == NULL)
    target = ref;
  guint k = GPOINTER_TO_UINT(g_hash_table_lookup(im->by_name, target));
  if (k == 0)
    return -2;
  return g_array_index(im->layers, paleo_layer, k - 1).tail;
}

wl_model *wl__load_paleo(const char *source, JsonNode *root, const char *text, GError **error)
{
  JsonObject *top = json_node_get_object(root);
  JsonObject *layers = json_object_get_object_member(top, "layers");
  g_autofree char *base = g_path_get_basename(source);
  const char *name = wl__json_string(top, "name") ? wl__json_string(top, "name") : base;
  importer im = {source, wl_model_new(name, 0, 0, 0), NULL, NULL, NULL, FALSE, 0, 0, 0};
  g_autoptr(wl_model) m = im.m;
  m->source = g_strdup(source);
  g_autoptr(GArray) pls = g_array_new(FALSE, TRUE, sizeof(paleo_layer));
  g_array_set_clear_func(pls, paleo_layer_clear);
  im.layers = pls;
  g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) endpoints = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  im.by_name = by_name;
  im.endpoints = endpoints;

  g_autoptr(GHashTable) lines = key_lines(text);
  /* json-glib keeps members in file order, which keeps the result deterministic. */
  g_autoptr(GList) names = json_object_get_members(layers);
  for (GList *l = names; l; l = l->next) {
    const char *lname = l->data;
    int line = GPOINTER_TO_INT(g_hash_table_lookup(lines, lname));
    JsonNode *ln = json_object_get_member(layers, lname);
    if (!JSON_NODE_HOLDS_OBJECT(ln)) {
      perr(&im, lname, line, error, "expected an object");
      return NULL;
    }
    JsonObject *lo = json_node_get_object(ln);
    g_auto(GStrv) parents = read_parents(&im, lname, line, lo, error);
    if (parents == NULL)
      return NULL;
    const char *type = wl__json_string(lo, "type") ? wl__json_string(lo, "type") : "";
    if (strcmp(type, "ModelParallel") == 0) {
      perr(&im, lname, line, error, "ModelParallel blocks are not supported; use --strategy mp");
      return NULL;
    }
    if (strcmp(type, "Block") != 0) {
      if (!import_layer(&im, lname, line, lo, parents, error))
        return NULL;
      continue;
    }
    JsonNode *inner = json_object_get_member(lo, "layers");
    if (inner == NULL || !JSON_NODE_HOLDS_OBJECT(inner)) {
      perr(&im, lname, line, error, "layers: a Block needs an object of layers");
      return NULL;
    }
    const char *endpoint = wl__json_string(lo, "endpoint");
    if (endpoint)
      g_hash_table_insert(endpoints, g_strdup(lname), g_strdup_printf("%s/%s", lname, endpoint));
    g_autoptr(GList) subs = json_object_get_members(json_node_get_object(inner));
    for (GList *s = subs; s; s = s->next) {
      g_autofree char *full = g_strdup_printf("%s/%s", lname, (const char *)s->data);
      JsonNode *sn = json_object_get_member(json_node_get_object(inner), s->data);
      int sline = GPOINTER_TO_INT(g_hash_table_lookup(lines, full));
      if (!JSON_NODE_HOLDS_OBJECT(sn)) {
        perr(&im, full, sline, error, "expected an object");
        return NULL;
      }
      JsonObject *so = json_node_get_object(sn);
      g_auto(GStrv) sp = read_parents(&im, full, sline, so, error);
      if (sp == NULL)
        return NULL;
      g_auto(GStrv) resolved = NULL;
      if (sp[0] == NULL) {
        resolved = g_strdupv(parents);
      } else {
        guint n = g_strv_length(sp);
        resolved = g_new0(char *, n + 1);
        for (guint i = 0; i < n; i++)
          resolved[i] = g_strdup_printf("%s/%s", lname, sp[i]);
      }
      const char *stype = wl__json_string(so, "type") ? wl__json_string(so, "type") : "";
      if (strcmp(stype, "Block") == 0 || strcmp(stype, "ModelParallel") == 0) {
        perr(&im, full, sline, error, "blocks inside blocks are not supported");
        return NULL;
      }
      if (!import_layer(&im, full, sline, so, resolved, error))
        return NULL;
    }
  }
  if (!im.have_input) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no layer of type Input", source);
    return NULL;
  }
  m->in_c = im.in_c, m->in_h = im.in_h, m->in_w = im.in_w;

  /* Resolve parents now that every name is known. */
  for (guint i = 0; i < pls->len; i++) {
    paleo_layer *pl = &g_array_index(pls, paleo_layer, i);
    if (pl->head < 0)
      continue;
    guint n = g_strv_length(pl->parents);
    if (n == 0) {
      perr(&im, pl->name, pl->line, error, "parents: empty (only the Input layer has none)");
      return NULL;
    }
    wl_spec *s = &g_array_index(m->specs, wl_spec, pl->head);
    g_free(s->parents);
    s->parents = g_new(int, n);
    s->n_parents = (int)n;
    for (guint j = 0; j < n; j++) {
      int r = resolve(&im, pl->parents[j]);
      if (r == -2) {
        perr(&im, pl->name, pl->line, error, "parent '%s' is not a layer of this file",
             pl->parents[j]);
        return NULL;
      }
      s->parents[j] = r;
    }
  }
  if (!wl_model_finish(m, error))
    return NULL;
  /* A Paleo filter states its input channels; they must match what the parent produces.
   * wl_model_finish() reorders the layers, so they are found by name (a table, not a search
   * per layer, which was quadratic in the convolutions). */
  g_autoptr(GHashTable) spec_of = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint k = 0; k < m->specs->len; k++)
    g_hash_table_insert(spec_of, g_array_index(m->specs, wl_spec, k).name, GUINT_TO_POINTER(k + 1));
  for (guint i = 0; i < pls->len; i++) {
    const paleo_layer *pl = &g_array_index(pls, paleo_layer, i);
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(spec_of, pl->name));
    if (pl->expect_in == 0 || k == 0)
      continue;
    const wl_spec *s = &g_array_index(m->specs, wl_spec, k - 1);
    if (s->in_c != pl->expect_in) {
      perr(&im, pl->name, pl->line, error,
           "filter takes %u input channels but its input has %u", pl->expect_in, s->in_c);
      return NULL;
    }
  }
  return g_steal_pointer(&m);
}
