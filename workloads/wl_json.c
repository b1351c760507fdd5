/* Loading models (a zoo name or a file whose format is detected from its content) and our own
 * JSON workload format, read and written with json-glib. The format is documented with an
 * example in docs/workloads.md:
 *
 *   {"format": "dtsim-workload", "version": 1, "name": "tiny", "input": [3, 32, 32],
 *    "layers": [{"name": "conv1", "type": "conv", "parents": ["input"], "out_channels": 16,
 *                "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "bias": true}, ...]}
 *
 * Every message about a bad file names the file and the line (and the layer) at fault. */
#include "wl_internal.h"
#include "util.h"

#include <string.h>

#define WL_FORMAT_NAME "dtsim-workload"
#define WL_FORMAT_VERSION 1

const char *wl__json_string(JsonObject *o, const char *key)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL || JSON_NODE_TYPE(n) != JSON_NODE_VALUE ||
      json_node_get_value_type(n) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string(n);
}

gboolean wl__json_number(JsonObject *o, const char *key, double *out)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL || JSON_NODE_TYPE(n) != JSON_NODE_VALUE)
    return FALSE;
  GType t = json_node_get_value_type(n);
  if (t != G_TYPE_DOUBLE && t != G_TYPE_INT64)
    return FALSE;
  *out = json_node_get_double(n);
  return TRUE;
}

/* ---- Reading ------------------------------------------------------------------------------- */

typedef struct {
  const char *source;
  const char *text;
  const char *layer;  /* name of the layer being read, or NULL */
} ctx;

static gboolean ctx_error(const ctx *c, const char *key, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean ctx_error(const ctx *c, const char *key, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  int line = c->layer ? wl__find_line(c->text, c->layer) : (key ? wl__find_line(c->text, key) : 0);
  g_autofree char *where = line > 0 ? g_strdup_printf("%s:%d", c->source, line)
                                    : g_strdup(c->source);
  if (c->layer && key)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: layer '%s': %s: %s", where, c->layer, key,
                msg);
  else if (c->layer)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: layer '%s': %s", where, c->layer, msg);
  else if (key)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s: %s", where, key, msg);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", where, msg);
  return FALSE;
}

/* The line of each layer's "name": "VALUE", found in one pass over the text from its "layers"
 * key: searching the whole text once per layer made reading quadratic in the layers. Names
 * written with escapes are left out (their layer's messages name no line). */
static GHashTable *layer_name_lines(const char *text)
{
  GHashTable *lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  /* A plain scan, not strstr(): under AddressSanitizer every strstr() call measures the rest
   * of the text, which made this pass quadratic again in the sanitizer builds. */
  static const char key[] = "\"name\"";
  const gsize klen = sizeof key - 1;
  const char *from = strstr(text, "\"layers\"");
  int line = 1;
  for (const char *p = text; p < (from ? from : text); p++)
    line += *p == '\n';
  for (const char *p = from ? from : text; *p; p++) {
    if (*p == '\n') {
      line++;
      continue;
    }
    if (*p != '"' || strncmp(p, key, klen) != 0)
      continue;
    const char *q = p + klen;
    while (*q == ' ' || *q == '\t' || *q == '\r')
      q++;
    if (*q != ':')
      continue;
    q++;
    while (*q == ' ' || *q == '\t' || *q == '\r')
      q++;
    if (*q != '"')
      continue;
    const char *v = q + 1, *e = v;
    while (*e && *e != '"' && *e != '\\' && *e != '\n')
      e++;
    if (*e == '"') {
      char *name = g_strndup(v, (gsize)(e - v));
      if (g_hash_table_contains(lines, name))
        g_free(name);
      else
        g_hash_table_insert(lines, name, GINT_TO_POINTER(line));
    }
    /* Continue after the value; the newlines skipped over (none in a plain value) are counted
     * by the loop from q on. */
    p = q;
  }
  return lines;
}

static gboolean node_u32(const ctx *c, const char *key, JsonNode *n, uint32_t min, uint32_t *out,
                         GError **error)
{
  if (n == NULL || JSON_NODE_TYPE(n) != JSON_NODE_VALUE ||
      json_node_get_value_type(n) != G_TYPE_INT64)
    return ctx_error(c, key, error, "expected a whole number");
  gint64 v = json_node_get_int(n);
  if (v < (gint64)min || v > (gint64)UINT32_MAX)
    return ctx_error(c, key, error, "%" G_GINT64_FORMAT " is out of range (at least %u)", v, min);
  *out = (uint32_t)v;
  return TRUE;
}

/* A number or a two-element array [h, w]. */
static gboolean get_pair(const ctx *c, JsonObject *o, const char *key, uint32_t min, uint32_t *a,
                         uint32_t *b, GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL)
    return TRUE;
  if (JSON_NODE_HOLDS_ARRAY(n)) {
    JsonArray *arr = json_node_get_array(n);
    if (json_array_get_length(arr) != 2)
      return ctx_error(c, key, error, "expected [height, width]");
    return node_u32(c, key, json_array_get_element(arr, 0), min, a, error) &&
           node_u32(c, key, json_array_get_element(arr, 1), min, b, error);
  }
  if (!node_u32(c, key, n, min, a, error))
    return FALSE;
  *b = *a;
  return TRUE;
}

static gboolean get_bool(const ctx *c, JsonObject *o, const char *key, gboolean *out,
                         GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL)
    return TRUE;
  if (JSON_NODE_TYPE(n) != JSON_NODE_VALUE || json_node_get_value_type(n) != G_TYPE_BOOLEAN)
    return ctx_error(c, key, error, "expected true or false");
  *out = json_node_get_boolean(n);
  return TRUE;
}

static gboolean get_string(const ctx *c, JsonObject *o, const char *key, const char **out,
                           GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (n == NULL || JSON_NODE_TYPE(n) != JSON_NODE_VALUE ||
      json_node_get_value_type(n) != G_TYPE_STRING)
    return ctx_error(c, key, error, "expected a string");
  *out = json_node_get_string(n);
  return TRUE;
}

/* Keys each layer type accepts beyond name, type and parents. */
static const char *const *known_keys(wl_layer_kind k)
{
  static const char *const conv[] = {"out_channels", "kernel", "stride", "padding",
                                     "dilation",     "groups", "bias",   NULL};
  static const char *const fcl[] = {"out_features", "bias", NULL};
  static const char *const poolk[] = {"kernel", "stride", "padding", "ceil_mode", NULL};
  static const char *const lrn[] = {"size", NULL};
  static const char *const drop[] = {"rate", NULL};
  static const char *const none[] = {NULL};
  switch (k) {
  case WL_LAYER_CONV: return conv;
  case WL_LAYER_FC: return fcl;
  case WL_LAYER_MAXPOOL:
  case WL_LAYER_AVGPOOL: return poolk;
  case WL_LAYER_LRN: return lrn;
  case WL_LAYER_DROPOUT: return drop;
  default: return none;
  }
}

static gboolean read_hparams(const ctx *c, JsonObject *o, wl_layer_kind kind, wl_hparams *hp,
                             GError **error)
{
  const char *const *known = known_keys(kind);
  g_autoptr(GList) members = json_object_get_members(o);
  for (GList *l = members; l; l = l->next) {
    const char *key = l->data;
    if (strcmp(key, "name") == 0 || strcmp(key, "type") == 0 || strcmp(key, "parents") == 0)
      continue;
    gboolean ok = FALSE;
    for (int i = 0; known[i] && !ok; i++)
      ok = strcmp(known[i], key) == 0;
    if (!ok)
      return ctx_error(c, key, error, "unknown key for a %s layer", wl_layer_kind_name(kind));
  }
  JsonNode *n;
  if (kind == WL_LAYER_CONV || kind == WL_LAYER_FC) {
    const char *key = kind == WL_LAYER_CONV ? "out_channels" : "out_features";
    if (!node_u32(c, key, json_object_get_member(o, key), 1, &hp->out, error))
      return FALSE;
  }
  if (kind == WL_LAYER_CONV || kind == WL_LAYER_MAXPOOL || kind == WL_LAYER_AVGPOOL) {
    if (!json_object_has_member(o, "kernel"))
      return ctx_error(c, "kernel", error, "missing");
    if (!get_pair(c, o, "kernel", 1, &hp->kh, &hp->kw, error))
      return FALSE;
    if (kind != WL_LAYER_CONV)
      hp->sh = hp->kh, hp->sw = hp->kw; /* pools default to non-overlapping windows */
    if (!get_pair(c, o, "stride", 1, &hp->sh, &hp->sw, error))
      return FALSE;
    n = json_object_get_member(o, "padding");
    if (n && JSON_NODE_TYPE(n) == JSON_NODE_VALUE &&
        json_node_get_value_type(n) == G_TYPE_STRING) {
      const char *p = json_node_get_string(n);
      if (g_ascii_strcasecmp(p, "same") == 0)
        hp->pad_same = TRUE;
      else if (g_ascii_strcasecmp(p, "valid") != 0)
        return ctx_error(c, "padding", error, "'%s' is not \"same\", \"valid\" or [h, w]", p);
    } else if (!get_pair(c, o, "padding", 0, &hp->ph, &hp->pw, error)) {
      return FALSE;
    }
    if (!get_pair(c, o, "dilation", 1, &hp->dh, &hp->dw, error) ||
        !get_bool(c, o, "ceil_mode", &hp->ceil_mode, error))
      return FALSE;
    if ((n = json_object_get_member(o, "groups")) && !node_u32(c, "groups", n, 1, &hp->groups, error))
      return FALSE;
  }
  if (!get_bool(c, o, "bias", &hp->bias, error))
    return FALSE;
  if ((n = json_object_get_member(o, "size")) && !node_u32(c, "size", n, 1, &hp->lrn_size, error))
    return FALSE;
  if ((n = json_object_get_member(o, "rate"))) {
    if (JSON_NODE_TYPE(n) != JSON_NODE_VALUE ||
        (json_node_get_value_type(n) != G_TYPE_DOUBLE &&
         json_node_get_value_type(n) != G_TYPE_INT64))
      return ctx_error(c, "rate", error, "expected a number");
    hp->drop_rate = json_node_get_double(n);
  }
  return TRUE;
}

/* Resolves the parent names of layer `idx` into indices; "input" is the network input. */
static gboolean resolve_parents(const ctx *c, wl_model *m, GHashTable *index, int idx,
                                JsonArray *parents, GError **error)
{
  wl_spec *s = &g_array_index(m->specs, wl_spec, idx);
  guint n = json_array_get_length(parents);
  if (n == 0)
    return ctx_error(c, "parents", error, "empty (use [\"input\"] for the network input)");
  g_free(s->parents);
  s->parents = g_new(int, n);
  s->n_parents = (int)n;
  for (guint j = 0; j < n; j++) {
    JsonNode *pn = json_array_get_element(parents, j);
    if (JSON_NODE_TYPE(pn) != JSON_NODE_VALUE || json_node_get_value_type(pn) != G_TYPE_STRING)
      return ctx_error(c, "parents", error, "expected names of layers");
    const char *pname = json_node_get_string(pn);
    gpointer v;
    if (strcmp(pname, "input") == 0)
      s->parents[j] = -1;
    else if (g_hash_table_lookup_extended(index, pname, NULL, &v))
      s->parents[j] = GPOINTER_TO_INT(v);
    else
      return ctx_error(c, "parents", error, "parent '%s' is not a layer of this file", pname);
  }
  return TRUE;
}

wl_model *wl__load_json(const char *source, JsonNode *root, const char *text, GError **error)
{
  ctx c = {source, text, NULL};
  JsonObject *top = json_node_get_object(root);
  static const char *const top_keys[] = {"format", "version", "name", "description", "input",
                                         "layers", NULL};
  g_autoptr(GList) members = json_object_get_members(top);
  for (GList *l = members; l; l = l->next) {
    gboolean ok = FALSE;
    for (int i = 0; top_keys[i] && !ok; i++)
      ok = strcmp(top_keys[i], l->data) == 0;
    if (!ok) {
      ctx_error(&c, l->data, error, "unknown key (expected format, version, name, description, "
                                    "input, layers)");
      return NULL;
    }
  }
  JsonNode *n = json_object_get_member(top, "version");
  if (n && (JSON_NODE_TYPE(n) != JSON_NODE_VALUE || json_node_get_value_type(n) != G_TYPE_INT64 ||
            json_node_get_int(n) != WL_FORMAT_VERSION)) {
    ctx_error(&c, "version", error, "only version %d is understood", WL_FORMAT_VERSION);
    return NULL;
  }
  const char *name = NULL;
  if (json_object_has_member(top, "name")) {
    if (!get_string(&c, top, "name", &name, error))
      return NULL;
  }
  g_autofree char *base = g_path_get_basename(source);
  JsonNode *in = json_object_get_member(top, "input");
  if (in == NULL || !JSON_NODE_HOLDS_ARRAY(in) || json_array_get_length(json_node_get_array(in)) != 3) {
    ctx_error(&c, "input", error, "expected [channels, height, width]");
    return NULL;
  }
  uint32_t shape[3];
  for (guint i = 0; i < 3; i++)
    if (!node_u32(&c, "input", json_array_get_element(json_node_get_array(in), i), 1, &shape[i],
                  error))
      return NULL;
  JsonNode *ln = json_object_get_member(top, "layers");
  if (ln == NULL || !JSON_NODE_HOLDS_ARRAY(ln)) {
    ctx_error(&c, "layers", error, "expected an array of layers");
    return NULL;
  }
  g_autoptr(wl_model) m = wl_model_new(name ? name : base, shape[0], shape[1], shape[2]);
  m->source = g_strdup(source);
  JsonArray *layers = json_node_get_array(ln);
  guint nl = json_array_get_length(layers);
  g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) name_lines = layer_name_lines(text);
  for (guint i = 0; i < nl; i++) {
    JsonNode *lnode = json_array_get_element(layers, i);
    c.layer = NULL;
    if (!JSON_NODE_HOLDS_OBJECT(lnode)) {
      ctx_error(&c, "layers", error, "element %u is not an object", i);
      return NULL;
    }
    JsonObject *lo = json_node_get_object(lnode);
    const char *lname = NULL, *type = NULL;
    if (!get_string(&c, lo, "name", &lname, error))
      return NULL;
    c.layer = lname;
    if (!get_string(&c, lo, "type", &type, error))
      return NULL;
    int kind = wl_layer_kind_parse(type);
    if (kind < 0) {
      ctx_error(&c, "type", error, "unknown layer type '%s'", type);
      return NULL;
    }
    wl_hparams hp = wl_hparams_default();
    if (!read_hparams(&c, lo, (wl_layer_kind)kind, &hp, error))
      return NULL;
    if (g_hash_table_contains(index, lname)) {
      ctx_error(&c, NULL, error, "a layer of this name is already defined");
      return NULL;
    }
    int idx = wl_model_add(m, lname, (wl_layer_kind)kind, &hp, NULL, 0);
    g_array_index(m->specs, wl_spec, idx).line =
        GPOINTER_TO_INT(g_hash_table_lookup(name_lines, lname));
    /* The hash table borrows the name held by the spec. */
    g_hash_table_insert(index, g_array_index(m->specs, wl_spec, idx).name, GINT_TO_POINTER(idx));
  }
  for (guint i = 0; i < nl; i++) {
    JsonObject *lo = json_array_get_object_element(layers, i);
    c.layer = json_object_get_string_member(lo, "name");
    JsonNode *pn = json_object_get_member(lo, "parents");
    if (pn == NULL || !JSON_NODE_HOLDS_ARRAY(pn)) {
      ctx_error(&c, "parents", error, "expected an array of layer names");
      return NULL;
    }
    if (!resolve_parents(&c, m, index, (int)i, json_node_get_array(pn), error))
      return NULL;
  }
  if (!wl_model_finish(m, error))
    return NULL;
  return g_steal_pointer(&m);
}

/* ---- Strict JSON -------------------------------------------------------------------------- */

/* The deepest nesting of objects and arrays read. A dtsim workload nests 4 levels (top object,
 * layers array, layer object, shape array), a Paleo network 4 plus 2 per nested Block; 64
 * leaves room for 29 nested Blocks and keeps json-glib's recursion far from the stack's end. */
#define WL_JSON_MAX_DEPTH 64

/* One character-exact pass over `text` against RFC 8259: one value, then only whitespace.
 * json-glib is more lenient: it took "{...}{...}" and "0 {...}" (two documents) and even some
 * text that is not JSON before a second document, kept one of them and leaked the others
 * (found by the workload fuzz harness). What passes here json-glib reads as one value. On a
 * fault *at is where it is and *what says what is wrong. Iterative, and nesting deeper than
 * WL_JSON_MAX_DEPTH is refused here, before json-glib sees the text: json-glib's parser
 * recurses once per level and overflowed the stack at 100 000 nested arrays. */
static gboolean json_scan_string(const char *t, gsize n, gsize *i, const char **what)
{
  for ((*i)++; *i < n; (*i)++) {
    unsigned char c = (unsigned char)t[*i];
    if (c == '"') {
      (*i)++;
      return TRUE;
    }
    if (c < 0x20) {
      *what = "a control character in a string (write it as an escape)";
      return FALSE;
    }
    if (c != '\\')
      continue;
    if (++*i == n)
      break;
    if (t[*i] == 'u') {
      for (int k = 0; k < 4; k++)
        if (++*i == n || !g_ascii_isxdigit(t[*i])) {
          *what = "expected four hexadecimal digits after \\u";
          return FALSE;
        }
    } else if (!strchr("\"\\/bfnrt", t[*i]) || t[*i] == '\0') {
      *what = "expected an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX";
      return FALSE;
    }
  }
  *what = "the file ends inside a string";
  return FALSE;
}

static gboolean json_scan_scalar(const char *t, gsize n, gsize *i, const char **what)
{
  static const char *const literals[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    gsize len = strlen(literals[k]);
    if (n - *i >= len && strncmp(t + *i, literals[k], len) == 0) {
      *i += len;
      return TRUE;
    }
  }
  gsize j = *i;
  if (j < n && t[j] == '-')
    j++;
  if (j < n && t[j] == '0')
    j++;
  else if (j < n && t[j] >= '1' && t[j] <= '9')
    while (j < n && g_ascii_isdigit(t[j]))
      j++;
  else {
    *what = "expected a value (an object, array, string, number, true, false or null)";
    return FALSE;
  }
  if (j < n && t[j] == '.') {
    if (++j == n || !g_ascii_isdigit(t[j])) {
      *i = j;
      *what = "expected a digit after the decimal point";
      return FALSE;
    }
    while (j < n && g_ascii_isdigit(t[j]))
      j++;
  }
  if (j < n && (t[j] == 'e' || t[j] == 'E')) {
    if (++j < n && (t[j] == '+' || t[j] == '-'))
      j++;
    if (j == n || !g_ascii_isdigit(t[j])) {
      *i = j;
      *what = "expected a digit in the exponent";
      return FALSE;
    }
    while (j < n && g_ascii_isdigit(t[j]))
      j++;
  }
  *i = j;
  return TRUE;
}

/* json_check's finding for a member name given twice in one object: valid JSON syntax, but
 * json-glib keeps the last value silently. */
static const char json_duplicate[] = "given twice in this object";

static void free_names(gpointer p)
{
  if (p)
    g_hash_table_destroy(p);
}

static gboolean json_check(const char *t, gsize n, gsize *at, const char **what)
{
  enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, NEXT_OR_CLOSE, DONE } want = VALUE;
  char stack[WL_JSON_MAX_DEPTH];   /* the open containers, '{' or '[' */
  /* Per open container, the member names seen (made at an object's first member). */
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(free_names);
  gsize depth = 0, i = 0;
  /* A UTF-8 byte order mark may be ignored (RFC 8259, 8.1), as json-glib does. */
  if (n >= 3 && memcmp(t, "\xef\xbb\xbf", 3) == 0)
    i = 3;
  for (;;) {
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
      i++;
    *at = i;
    if (i == n) {
      if (want == DONE)
        return TRUE;
      *what = depth ? "the file ends inside the value" : "expected a value";
      return FALSE;
    }
    char c = t[i];
    gboolean closes = depth > 0 && c == (stack[depth - 1] == '{' ? '}' : ']');
    switch (want) {
    case VALUE_OR_CLOSE:
    case KEY_OR_CLOSE:
      if (closes) {
        depth--, i++;
        g_ptr_array_set_size(names, (guint)depth);
        want = depth ? NEXT_OR_CLOSE : DONE;
        continue;
      }
      if (want == KEY_OR_CLOSE)
        goto key;
      /* fall through */
    case VALUE:
      if (c == '{' || c == '[') {
        if (depth == WL_JSON_MAX_DEPTH) {
          *what = "objects and arrays nested deeper than " G_STRINGIFY(WL_JSON_MAX_DEPTH)
                  " levels";
          return FALSE;
        }
        stack[depth++] = c;
        g_ptr_array_add(names, NULL);
        i++;
        want = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
        continue;
      }
      if (!(c == '"' ? json_scan_string(t, n, &i, what) : json_scan_scalar(t, n, &i, what))) {
        *at = MIN(i, n);
        return FALSE;
      }
      want = depth ? NEXT_OR_CLOSE : DONE;
      continue;
    case KEY:
    key:
      if (c != '"') {
        *what = "expected a member name in double quotes";
        return FALSE;
      }
      gsize start = i;
      if (!json_scan_string(t, n, &i, what)) {
        *at = MIN(i, n);
        return FALSE;
      }
      if (!names->pdata[depth - 1])
        names->pdata[depth - 1] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
      if (!g_hash_table_add(names->pdata[depth - 1], g_strndup(t + start, i - start))) {
        *what = json_duplicate;
        return FALSE;
      }
      want = COLON;
      continue;
    case COLON:
      if (c != ':') {
        *what = "expected ':' after the member name";
        return FALSE;
      }
      i++;
      want = VALUE;
      continue;
    case NEXT_OR_CLOSE:
      if (c == ',') {
        i++;
        want = stack[depth - 1] == '{' ? KEY : VALUE;
      } else if (closes) {
        depth--, i++;
        g_ptr_array_set_size(names, (guint)depth);
        want = depth ? NEXT_OR_CLOSE : DONE;
      } else {
        *what = stack[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
        return FALSE;
      }
      continue;
    case DONE:
      *what = "text after the top-level value (a file holds one JSON value)";
      return FALSE;
    }
  }
}

/* ---- Loading ------------------------------------------------------------------------------- */

wl_model *wl_model_load_data(const char *source, const char *data, gsize len, GError **error)
{
  /* `data` need not end in a NUL, but the line finders (wl__find_line) search it with strstr():
   * read a NUL-terminated copy. */
  g_autofree char *text = g_malloc(len + 1);
  memcpy(text, data, len);
  text[len] = '\0';
  gsize at;
  const char *what;
  if (!json_check(text, len, &at, &what)) {
    if (at < len && text[at] == '/')
      what = "a comment (JSON has none)";
    else if (at < len && text[at] == '\'')
      what = "a single quote (JSON strings are in double quotes)";
    int col;
    int line = wl__line_of(text, text + at, &col);
    if (what == json_duplicate) {
      g_autofree char *name = g_strndup(text + at, strcspn(text + at + 1, "\"") + 2);
      g_autofree char *shown = dt_escape(name);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d:%d: member %s %s", source, line, col,
                  shown, what);
      return NULL;
    }
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d:%d: not JSON: %s", source, line,
                col, what);
    return NULL;
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) perr = NULL;
  if (!json_parser_load_from_data(parser, text, (gssize)len, &perr)) {
    /* json-glib reports "<data>:LINE:COLUMN: Parse error: ..."; put the file name first. */
    const char *msg = perr->message;
    if (g_str_has_prefix(msg, "<data>:"))
      msg += strlen("<data>:");
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%s", source, msg);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: not a JSON object", source);
    return NULL;
  }
  JsonObject *top = json_node_get_object(root);
  JsonNode *layers = json_object_get_member(top, "layers");
  const char *format = json_object_has_member(top, "format")
                           ? (wl__json_string(top, "format") ? wl__json_string(top, "format") : "")
                           : NULL;
  if (format && strcmp(format, WL_FORMAT_NAME) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d: format '%s' is not '%s'", source,
                wl__find_line(text, "format"), format, WL_FORMAT_NAME);
    return NULL;
  }
  if (format || (layers && JSON_NODE_HOLDS_ARRAY(layers)))
    return wl__load_json(source, root, text, error);
  if (layers && JSON_NODE_HOLDS_OBJECT(layers))
    return wl__load_paleo(source, root, text, error);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "%s: neither a dtsim workload (\"format\": \"%s\") nor a Paleo network "
              "(\"layers\" object)", source, WL_FORMAT_NAME);
  return NULL;
}

wl_model *wl_model_load(const char *name_or_path, GError **error)
{
  g_return_val_if_fail(name_or_path != NULL, NULL);
  gboolean looks_like_file = strchr(name_or_path, '/') || g_str_has_suffix(name_or_path, ".json");
  /* Anything at the path is read (a FIFO, /dev/stdin), under the input size limit. */
  if (g_file_test(name_or_path, G_FILE_TEST_EXISTS)) {
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!dt_read_file(name_or_path, NULL, DT_INPUT_MAX_BYTES, &text, &len, error))
      return NULL;
    return wl_model_load_data(name_or_path, text, len, error);
  }
  if (looks_like_file) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no such workload file", name_or_path);
    return NULL;
  }
  return wl_zoo_build(name_or_path, error);
}

/* ---- Writing ------------------------------------------------------------------------------- */

static void add_pair(JsonBuilder *b, const char *key, uint32_t h, uint32_t w)
{
  json_builder_set_member_name(b, key);
  json_builder_begin_array(b);
  json_builder_add_int_value(b, h);
  json_builder_add_int_value(b, w);
  json_builder_end_array(b);
}

/* Compact JSON text of one node. */
static char *node_text(JsonNode *node)
{
  g_autoptr(JsonGenerator) gen = json_generator_new();
  json_generator_set_root(gen, node);
  return json_generator_to_data(gen, NULL);
}

static JsonNode *layer_node(const wl_model *m, const wl_spec *s)
{
  const wl_hparams *hp = &s->hp;
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "name");
  json_builder_add_string_value(b, s->name);
  json_builder_set_member_name(b, "type");
  json_builder_add_string_value(b, wl_layer_kind_name(s->kind));
  json_builder_set_member_name(b, "parents");
  json_builder_begin_array(b);
  for (int j = 0; j < s->n_parents; j++)
    json_builder_add_string_value(
        b, s->parents[j] < 0 ? "input" : g_array_index(m->specs, wl_spec, s->parents[j]).name);
  json_builder_end_array(b);
  switch (s->kind) {
  case WL_LAYER_CONV:
  case WL_LAYER_MAXPOOL:
  case WL_LAYER_AVGPOOL:
    if (s->kind == WL_LAYER_CONV) {
      json_builder_set_member_name(b, "out_channels");
      json_builder_add_int_value(b, hp->out);
    }
    add_pair(b, "kernel", hp->kh, hp->kw);
    add_pair(b, "stride", hp->sh, hp->sw);
    if (hp->pad_same) {
      json_builder_set_member_name(b, "padding");
      json_builder_add_string_value(b, "same");
    } else {
      add_pair(b, "padding", hp->ph, hp->pw);
    }
    if (s->kind == WL_LAYER_CONV) {
      if (hp->dh != 1 || hp->dw != 1)
        add_pair(b, "dilation", hp->dh, hp->dw);
      if (hp->groups != 1) {
        json_builder_set_member_name(b, "groups");
        json_builder_add_int_value(b, hp->groups);
      }
      json_builder_set_member_name(b, "bias");
      json_builder_add_boolean_value(b, hp->bias);
    } else if (hp->ceil_mode) {
      json_builder_set_member_name(b, "ceil_mode");
      json_builder_add_boolean_value(b, TRUE);
    }
    break;
  case WL_LAYER_FC:
    json_builder_set_member_name(b, "out_features");
    json_builder_add_int_value(b, hp->out);
    json_builder_set_member_name(b, "bias");
    json_builder_add_boolean_value(b, hp->bias);
    break;
  case WL_LAYER_LRN:
    json_builder_set_member_name(b, "size");
    json_builder_add_int_value(b, hp->lrn_size);
    break;
  case WL_LAYER_DROPOUT:
    json_builder_set_member_name(b, "rate");
    json_builder_add_double_value(b, hp->drop_rate);
    break;
  default:
    break;
  }
  json_builder_end_object(b);
  return json_builder_get_root(b);
}

char *wl_model_to_json(const wl_model *m)
{
  /* One layer per line keeps exported files short and easy to diff. */
  GString *out = g_string_new("{\n");
  g_autoptr(JsonNode) name = json_node_init_string(json_node_alloc(), m->name);
  g_autofree char *name_text = node_text(name);
  g_string_append_printf(out, "  \"format\": \"%s\",\n  \"version\": %d,\n  \"name\": %s,\n",
                         WL_FORMAT_NAME, WL_FORMAT_VERSION, name_text);
  g_string_append_printf(out, "  \"input\": [%u, %u, %u],\n  \"layers\": [\n", m->in_c, m->in_h,
                         m->in_w);
  for (guint i = 0; i < m->specs->len; i++) {
    g_autoptr(JsonNode) node = layer_node(m, &g_array_index(m->specs, wl_spec, i));
    g_autofree char *text = node_text(node);
    g_string_append_printf(out, "    %s%s\n", text, i + 1 < m->specs->len ? "," : "");
  }
  g_string_append(out, "  ]\n}");
  return g_string_free(out, FALSE);
}

gboolean wl_model_write_json(const wl_model *m, FILE *out, GError **error)
{
  g_autofree char *text = wl_model_to_json(m);
  if (fputs(text, out) < 0 || fputc('\n', out) == EOF) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "cannot write the model: write failed");
    return FALSE;
  }
  return TRUE;
}
