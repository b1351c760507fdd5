/* Reading Chakra execution traces (see wl_chakra.h). Each file is streamed one message at a
 * time: a varint length, then that many bytes, unpacked by the protobuf-c code generated from
 * workloads/chakra/et_def.proto. */
#include "wl_chakra.h"

#include "et_def.pb-c.h"
#include "util.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

static const char *const comm_names[WL_CHAKRA_COMM_TYPES] = {
    "all-reduce", "reduce",   "all-gather",     "gather",                "scatter",
    "broadcast",  "all-to-all", "reduce-scatter", "reduce-scatter-block", "barrier"};

const char *wl_chakra_comm_name(wl_chakra_comm c)
{
  return (unsigned)c < WL_CHAKRA_COMM_TYPES ? comm_names[c] : "?";
}

char *wl_chakra_node_where(const wl_chakra_rank *r, uint32_t node)
{
  const wl_chakra_node *n = &r->nodes[node];
  return g_strdup_printf("%s: node %" G_GUINT64_FORMAT " (%s)", r->path, n->id,
                         n->name && *n->name ? n->name : "unnamed");
}

/* ---- Messages ------------------------------------------------------------------------------ */

typedef struct {
  FILE *f;
  const char *path;
  uint64_t offset;          /* bytes read so far */
  guint8 *buf;
  size_t cap;
} reader;

typedef enum { READ_OK, READ_EOF, READ_ERROR } read_status;

/* The next message's bytes in r->buf (*len of them); READ_EOF at the end of the file. */
static read_status read_message(reader *r, const char *what, size_t *len, GError **error)
{
  uint64_t v = 0;
  uint64_t start = r->offset;
  for (unsigned shift = 0;; shift += 7) {
    int c = getc_unlocked(r->f);
    if (c == EOF) {
      if (ferror(r->f)) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", r->path, g_strerror(errno));
        return READ_ERROR;
      }
      if (shift == 0)
        return READ_EOF;
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: truncated: the length of %s at byte %" G_GUINT64_FORMAT " is cut off",
                  r->path, what, start);
      return READ_ERROR;
    }
    r->offset++;
    if (shift >= 63 && (c & 0x7e)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: not a Chakra execution trace: the length of %s at byte %" G_GUINT64_FORMAT
                  " is not a varint", r->path, what, start);
      return READ_ERROR;
    }
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80))
      break;
  }
  if (v > WL_CHAKRA_MAX_MESSAGE_BYTES) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s at byte %" G_GUINT64_FORMAT " claims %" G_GUINT64_FORMAT
                " bytes, more than the %u a Chakra message may have here (not a Chakra trace, "
                "or a damaged one)", r->path, what, start, v, WL_CHAKRA_MAX_MESSAGE_BYTES);
    return READ_ERROR;
  }
  if (v > r->cap) {
    r->cap = MAX((size_t)v, 2 * r->cap);
    r->buf = g_realloc(r->buf, r->cap);
  }
  size_t got = fread(r->buf, 1, (size_t)v, r->f);
  r->offset += got;
  if (got < v) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: truncated: %s at byte %" G_GUINT64_FORMAT " needs %" G_GUINT64_FORMAT
                " bytes, the file has %zu left", r->path, what, start, v, got);
    return READ_ERROR;
  }
  *len = (size_t)v;
  return READ_OK;
}

/* ---- Unpacking ----------------------------------------------------------------------------- */

/* protobuf-c allocates every sub-message and string of an unpacked node; a node is dropped as
 * soon as it is read, so its allocations come from an arena that is emptied per message
 * (malloc and free of a million nodes' attributes were a quarter of the reading time). */
typedef struct {
  guint8 *base;
  size_t cap, used;
  GPtrArray *extra;         /* blocks that did not fit, freed at the reset */
} arena;

static void *arena_alloc(void *data, size_t size)
{
  arena *a = data;
  size = (size + 15) & ~(size_t)15;
  if (a->used + size <= a->cap) {
    void *p = a->base + a->used;
    a->used += size;
    return p;
  }
  void *p = g_malloc(size);
  g_ptr_array_add(a->extra, p);
  return p;
}

static void arena_free(void *data, void *p)
{
  (void)data;
  (void)p;
}

/* Empties the arena; one that overflowed grows to hold the next such message at once. */
static void arena_reset(arena *a)
{
  if (a->extra->len > 0) {
    a->cap = MAX(2 * a->cap, a->used + 16 * a->extra->len);
    g_free(a->base);
    a->base = g_malloc(a->cap);
    g_ptr_array_set_size(a->extra, 0);
  }
  a->used = 0;
}

/* ---- Attributes ---------------------------------------------------------------------------- */

/* An integer attribute of any of the schema's integer kinds (the converter writes comm_size as
 * int64 and tensor_size as uint64; other writers differ); FALSE for other kinds. */
static gboolean attr_int(const ChakraProtoMsg__AttributeProto *a, int64_t *out)
{
  switch (a->value_case) {
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *out = a->int64_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: *out = (int64_t)a->uint64_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *out = a->int32_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *out = a->uint32_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *out = a->sint64_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *out = a->sint32_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: *out = (int64_t)a->fixed64_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *out = a->fixed32_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *out = a->sfixed64_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *out = a->sfixed32_val; return TRUE;
  case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *out = a->bool_val; return TRUE;
  default: return FALSE;
  }
}

/* ---- One rank ------------------------------------------------------------------------------ */

static gboolean node_fail(GError **error, const char *path, const ChakraProtoMsg__Node *m,
                          const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean node_fail(GError **error, const char *path, const ChakraProtoMsg__Node *m,
                          const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: node %" G_GUINT64_FORMAT " (%s): %s", path,
              m->id, m->name && *m->name ? m->name : "unnamed", what);
  return FALSE;
}

/* Fills n from the message m; deps go to `deps` as ids, resolved later. */
static gboolean node_from(const char *path, const ChakraProtoMsg__Node *m, GHashTable *groups,
                          GStringChunk *names, wl_chakra_node *n, GArray *dep_ids,
                          GError **error)
{
  if (m->type < CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE ||
      m->type > CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
    return node_fail(error, path, m, "type %d is not a node type of the Chakra schema (1 to 7)",
                     (int)m->type);
  *n = (wl_chakra_node){.id = m->id, .type = (uint8_t)m->type, .group = WL_CHAKRA_WORLD};
  n->name = g_string_chunk_insert_const(names, m->name ? m->name : "");
  if (m->duration_micros > UINT64_MAX / 1000000)
    return node_fail(error, path, m, "duration_micros %" G_GUINT64_FORMAT " is too large",
                     m->duration_micros);
  n->duration_ps = m->duration_micros * 1000000;
  n->first_dep = dep_ids->len;
  for (size_t i = 0; i < m->n_data_deps; i++)
    g_array_append_val(dep_ids, m->data_deps[i]);
  for (size_t i = 0; i < m->n_ctrl_deps; i++)
    g_array_append_val(dep_ids, m->ctrl_deps[i]);
  n->n_deps = dep_ids->len - n->first_dep;
  gboolean has_type = FALSE, has_size = FALSE;
  int64_t tensor_size = 0;
  const char *pg = NULL;
  for (size_t i = 0; i < m->n_attr; i++) {
    const ChakraProtoMsg__AttributeProto *a = m->attr[i];
    const char *key = a->name ? a->name : "";
    int64_t v = 0;
    gboolean is_int = attr_int(a, &v);
    if (strcmp(key, "pg_name") == 0 || strcmp(key, "comm_group") == 0) {
      if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        pg = a->string_val;
      else if (!is_int)
        return node_fail(error, path, m, "attribute %s is neither a string nor an integer", key);
      else {
        char text[24];
        g_snprintf(text, sizeof text, "%" G_GINT64_FORMAT, v);
        pg = g_string_chunk_insert_const(names, text);
      }
      continue;
    }
    static const char *const ints[] = {"comm_type", "comm_size", "num_ops", "tensor_size",
                                       "is_cpu_op", "comm_src", "comm_dst", "comm_tag",
                                       "stream"};
    guint k = 0;
    while (k < G_N_ELEMENTS(ints) && strcmp(key, ints[k]) != 0)
      k++;
    if (k == G_N_ELEMENTS(ints))
      continue;   /* what dtsim does not use (rf_id, op_schema, ...) */
    if (!is_int)
      return node_fail(error, path, m, "attribute %s is not an integer", key);
    gboolean negative_ok = k == 8;
    if (v < 0 && !negative_ok)
      return node_fail(error, path, m, "attribute %s is negative (%" G_GINT64_FORMAT ")", key, v);
    switch (k) {
    case 0:
      if (v >= WL_CHAKRA_COMM_TYPES)
        return node_fail(error, path, m, "comm_type %" G_GINT64_FORMAT " is not a collective of "
                         "the Chakra schema (0 to 9)", v);
      n->comm = (uint8_t)v;
      has_type = TRUE;
      break;
    case 1: n->bytes = (uint64_t)v; has_size = TRUE; break;
    case 2: n->flops = (uint64_t)v; break;
    case 3: tensor_size = v; break;
    case 4: n->cpu = v != 0; break;
    case 5:
    case 6:
      if (v > INT32_MAX)
        return node_fail(error, path, m, "attribute %s %" G_GINT64_FORMAT " is not a rank", key, v);
      if ((k == 5 && m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE) ||
          (k == 6 && m->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE))
        n->peer = (int32_t)v;
      break;
    case 7: n->tag = (int32_t)CLAMP(v, 0, INT32_MAX); break;
    case 8: n->stream = (uint32_t)CLAMP(v, 0, WL_CHAKRA_MAX_STREAM); break;
    }
  }
  if (!has_size)
    n->bytes = (uint64_t)tensor_size;
  else if (n->type < WL_CHAKRA_SEND)
    n->bytes = (uint64_t)tensor_size;
  if (n->type == WL_CHAKRA_COLL) {
    if (!has_type)
      return node_fail(error, path, m, "a collective without a comm_type attribute");
    if (groups && pg) {
      gpointer idx;
      if (!g_hash_table_lookup_extended(groups, pg, NULL, &idx))
        return node_fail(error, path, m, "process group \"%s\" is not in comm_group.json", pg);
      n->group = GPOINTER_TO_UINT(idx);
    }
  }
  if (n->type == WL_CHAKRA_SEND || n->type == WL_CHAKRA_RECV) {
    gboolean has_peer = FALSE;
    for (size_t i = 0; i < m->n_attr; i++)
      has_peer |= m->attr[i]->name &&
                  strcmp(m->attr[i]->name,
                         n->type == WL_CHAKRA_SEND ? "comm_dst" : "comm_src") == 0;
    if (!has_peer)
      return node_fail(error, path, m, "a %s without its %s attribute",
                       n->type == WL_CHAKRA_SEND ? "send" : "receive",
                       n->type == WL_CHAKRA_SEND ? "comm_dst" : "comm_src");
  }
  return TRUE;
}

/* A binary min-heap of node indices, for a dependency order that keeps file order among the
 * nodes that are free at once. */
typedef struct {
  uint32_t *v;
  uint32_t n;
} heap;

static void heap_push(heap *h, uint32_t x)
{
  uint32_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2] > x) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
}

static uint32_t heap_pop(heap *h)
{
  uint32_t top = h->v[0], x = h->v[--h->n], i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c])
      c++;
    if (h->v[c] >= x)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = x;
  return top;
}

/* Resolves dependency ids to indices and orders the nodes; names a missing node or a cycle. */
static gboolean order_rank(wl_chakra_rank *r, const GArray *dep_ids, GError **error)
{
  uint32_t n = r->n_nodes;
  g_autoptr(GHashTable) index = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (uint32_t i = 0; i < n; i++) {
    if (g_hash_table_contains(index, &r->nodes[i].id)) {
      g_autofree char *where = wl_chakra_node_where(r, i);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a second node with this id", where);
      return FALSE;
    }
    g_hash_table_insert(index, &r->nodes[i].id, GUINT_TO_POINTER(i + 1));
  }
  r->n_deps = dep_ids->len;
  r->deps = g_new(uint32_t, MAX(r->n_deps, 1));
  g_autofree uint32_t *waits = g_new0(uint32_t, MAX(n, 1));
  g_autofree uint32_t *succ_start = g_new0(uint32_t, (gsize)n + 1);
  for (uint32_t i = 0; i < n; i++) {
    const wl_chakra_node *x = &r->nodes[i];
    for (uint32_t k = 0; k < x->n_deps; k++) {
      uint64_t id = g_array_index(dep_ids, uint64_t, x->first_dep + k);
      guint j = GPOINTER_TO_UINT(g_hash_table_lookup(index, &id));
      if (j == 0) {
        g_autofree char *where = wl_chakra_node_where(r, i);
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: depends on node %" G_GUINT64_FORMAT ", which is not in the file", where,
                    id);
        return FALSE;
      }
      if (j - 1 == i) {
        g_autofree char *where = wl_chakra_node_where(r, i);
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: depends on itself (a cycle)", where);
        return FALSE;
      }
      r->deps[x->first_dep + k] = j - 1;
      waits[i]++;
      succ_start[j - 1]++;
    }
  }
  /* Successor lists, compressed. */
  for (uint32_t i = 0, sum = 0; i <= n; i++) {
    uint32_t c = i < n ? succ_start[i] : 0;
    succ_start[i] = sum;
    sum += c;
  }
  g_autofree uint32_t *succ = g_new(uint32_t, MAX(r->n_deps, 1));
  g_autofree uint32_t *fill = g_memdup2(succ_start, ((gsize)n + 1) * sizeof *fill);
  for (uint32_t i = 0; i < n; i++) {
    const wl_chakra_node *x = &r->nodes[i];
    for (uint32_t k = 0; k < x->n_deps; k++)
      succ[fill[r->deps[x->first_dep + k]]++] = i;
  }
  r->order = g_new(uint32_t, MAX(n, 1));
  heap h = {g_new(uint32_t, MAX(n, 1)), 0};
  for (uint32_t i = 0; i < n; i++)
    if (waits[i] == 0)
      heap_push(&h, i);
  uint32_t done = 0;
  while (h.n > 0) {
    uint32_t i = heap_pop(&h);
    r->order[done++] = i;
    for (uint32_t k = succ_start[i]; k < succ_start[i + 1]; k++)
      if (--waits[succ[k]] == 0)
        heap_push(&h, succ[k]);
  }
  g_free(h.v);
  if (done < n) {
    /* The first node left waits on a cycle or on a node behind one. */
    uint32_t i = 0;
    while (waits[i] == 0)
      i++;
    const wl_chakra_node *x = &r->nodes[i];
    uint32_t j = i;
    for (uint32_t k = 0; k < x->n_deps; k++)
      if (waits[r->deps[x->first_dep + k]]) {
        j = r->deps[x->first_dep + k];
        break;
      }
    g_autofree char *where = wl_chakra_node_where(r, i);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: its dependencies form a cycle (through node %" G_GUINT64_FORMAT ")", where,
                r->nodes[j].id);
    return FALSE;
  }
  return TRUE;
}

gboolean wl_chakra__read_rank(const char *path, GHashTable *groups, GStringChunk *names,
                              uint64_t *budget_nodes, wl_chakra_rank *out, GError **error)
{
  memset(out, 0, sizeof *out);
  out->path = g_strdup(path);
  FILE *f = fopen(path, "rb");
  if (!f) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", path, g_strerror(errno));
    return FALSE;
  }
  reader r = {f, path, 0, NULL, 0};
  gboolean ok = FALSE;
  size_t len = 0;
  GArray *nodes = g_array_new(FALSE, FALSE, sizeof(wl_chakra_node));
  g_autoptr(GArray) dep_ids = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  int c0 = getc(f), c1 = c0 == EOF ? EOF : getc(f);
  if (c0 == 0x1f && c1 == 0x8b) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a gzip file; gunzip it first", path);
    goto out;
  }
  rewind(f);
  read_status st = read_message(&r, "the global metadata", &len, error);
  if (st == READ_ERROR)
    goto out;
  if (st == READ_EOF) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty: no global metadata", path);
    goto out;
  }
  ChakraProtoMsg__GlobalMetadata *meta = chakra_proto_msg__global_metadata__unpack(NULL, len,
                                                                                    r.buf);
  if (!meta) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: not a Chakra execution trace: its first message is not a GlobalMetadata",
                path);
    goto out;
  }
  /* dtsim's own traces name the collective algorithm they were simulated with. */
  for (size_t i = 0; i < meta->n_attr; i++)
    if (meta->attr[i]->name && strcmp(meta->attr[i]->name, "comm_algorithm") == 0 &&
        meta->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
      out->algorithm = g_string_chunk_insert_const(names, meta->attr[i]->string_val);
  chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
  arena pool = {g_malloc(1 << 16), 1 << 16, 0, g_ptr_array_new_with_free_func(g_free)};
  ProtobufCAllocator alloc = {arena_alloc, arena_free, &pool};
  for (;;) {
    uint64_t at = r.offset;
    st = read_message(&r, "a node", &len, error);
    if (st == READ_ERROR)
      break;
    if (st == READ_EOF)
      break;
    arena_reset(&pool);
    ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(&alloc, len, r.buf);
    if (!m) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: the message at byte %" G_GUINT64_FORMAT " (after node %u) is not a "
                  "Chakra node", path, at, nodes->len);
      st = READ_ERROR;
      break;
    }
    if (*budget_nodes == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: node %" G_GUINT64_FORMAT ": the trace has more than %u nodes, more than "
                  "dtsim reads", path, m->id, WL_CHAKRA_MAX_NODES);
      st = READ_ERROR;
      break;
    }
    (*budget_nodes)--;
    wl_chakra_node n;
    if (!node_from(path, m, groups, names, &n, dep_ids, error)) {
      st = READ_ERROR;
      break;
    }
    g_array_append_val(nodes, n);
  }
  g_free(pool.base);
  g_ptr_array_free(pool.extra, TRUE);
  if (st == READ_ERROR)
    goto out;
  out->n_nodes = nodes->len;
  out->nodes = (wl_chakra_node *)g_array_free(nodes, FALSE);
  nodes = NULL;
  ok = order_rank(out, dep_ids, error);
out:
  if (nodes)
    g_array_free(nodes, TRUE);
  g_free(r.buf);
  fclose(f);
  return ok;
}

/* ---- The folder ---------------------------------------------------------------------------- */

static void group_free(gpointer p)
{
  wl_chakra_group *g = p;
  g_free(g->name);
  g_free(g->ranks);
  g_free(g);
}

void wl_chakra_free(wl_chakra_trace *t)
{
  if (!t)
    return;
  for (uint32_t r = 0; t->ranks && r < t->n_ranks; r++) {
    g_free(t->ranks[r].path);
    g_free(t->ranks[r].nodes);
    g_free(t->ranks[r].deps);
    g_free(t->ranks[r].order);
  }
  g_free(t->ranks);
  if (t->groups)
    g_ptr_array_free(t->groups, TRUE);
  if (t->names)
    g_string_chunk_free(t->names);
  g_free(t->groups_path);
  g_free(t->dir);
  g_free(t);
}

/* comm_group.json: {"NAME": [rank, ...], ...}; ranks below n_ranks, none twice in a group. */
static gboolean load_groups(wl_chakra_trace *t, GHashTable *index, GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!dt_read_file(t->groups_path, "--chakra", 64 << 20, &data, &len, error))
    return FALSE;
  g_autoptr(JsonParser) parser = json_parser_new();
  GError *jerr = NULL;
  if (!json_parser_load_from_data(parser, data, (gssize)len, &jerr)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", t->groups_path, jerr->message);
    g_error_free(jerr);
    return FALSE;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: not an object of process groups ({\"name\": [ranks]})", t->groups_path);
    return FALSE;
  }
  JsonObject *o = json_node_get_object(root);
  g_autoptr(GList) members = json_object_get_members(o);
  for (GList *l = members; l; l = l->next) {
    const char *name = l->data;
    JsonNode *v = json_object_get_member(o, name);
    if (!JSON_NODE_HOLDS_ARRAY(v) || json_array_get_length(json_node_get_array(v)) == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: group \"%s\": not a non-empty array of ranks", t->groups_path, name);
      return FALSE;
    }
    JsonArray *a = json_node_get_array(v);
    wl_chakra_group *g = g_new0(wl_chakra_group, 1);
    g->name = g_strdup(name);
    g->n = json_array_get_length(a);
    g->ranks = g_new(uint32_t, g->n);
    g_ptr_array_add(t->groups, g);
    g_autofree guint8 *seen = g_new0(guint8, t->n_ranks);
    for (uint32_t i = 0; i < g->n; i++) {
      JsonNode *e = json_array_get_element(a, i);
      if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: group \"%s\": entry %u is not a rank",
                    t->groups_path, name, i);
        return FALSE;
      }
      int64_t rank = json_node_get_int(e);
      if (rank < 0 || rank >= t->n_ranks) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: group \"%s\" names rank %" G_GINT64_FORMAT ", which does not exist (the "
                    "trace has ranks 0 to %u)", t->groups_path, name, rank, t->n_ranks - 1);
        return FALSE;
      }
      if (seen[rank]++) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: group \"%s\" names rank %" G_GINT64_FORMAT " twice", t->groups_path,
                    name, rank);
        return FALSE;
      }
      g->ranks[i] = (uint32_t)rank;
    }
    g_hash_table_insert(index, g->name, GUINT_TO_POINTER(t->groups->len - 1));
  }
  return TRUE;
}

/* "PREFIX.RANK.et": the rank, or -1. */
static int64_t file_rank(const char *name, char **prefix)
{
  size_t len = strlen(name);
  if (len < 4 || strcmp(name + len - 3, ".et") != 0)
    return -1;
  size_t end = len - 3, start = end;
  while (start > 0 && g_ascii_isdigit(name[start - 1]))
    start--;
  if (start == end || start == 0 || name[start - 1] != '.' || end - start > 9)
    return -1;
  *prefix = g_strndup(name, start - 1);
  return g_ascii_strtoll(name + start, NULL, 10);
}

wl_chakra_trace *wl_chakra_load(const char *dir, const char *what, GError **error)
{
  GError *derr = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &derr);
  if (!d) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s %s: %s", what, dir, derr->message);
    g_error_free(derr);
    return NULL;
  }
  g_autoptr(wl_chakra_trace) t = g_new0(wl_chakra_trace, 1);
  t->dir = g_strdup(dir);
  t->groups = g_ptr_array_new_with_free_func(group_free);
  t->names = g_string_chunk_new(1 << 16);
  g_autofree char *prefix = NULL;
  g_autoptr(GHashTable) files = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  int64_t max_rank = -1;
  for (const char *name; (name = g_dir_read_name(d));) {
    g_autofree char *p = NULL;
    int64_t rank = file_rank(name, &p);
    if (rank < 0)
      continue;
    if (prefix && strcmp(prefix, p) != 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s %s: traces of two jobs in one folder (%s.*.et and %s.*.et)", what, dir,
                  prefix, p);
      return NULL;
    }
    if (!prefix)
      prefix = g_steal_pointer(&p);
    if (rank >= WL_CHAKRA_MAX_RANKS) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s %s: %s: rank %" G_GINT64_FORMAT
                  " is more than dtsim simulates (%u ranks)", what, dir, name, rank,
                  WL_CHAKRA_MAX_RANKS);
      return NULL;
    }
    int64_t *key = g_new(int64_t, 1);
    *key = rank;
    g_hash_table_insert(files, key, g_build_filename(dir, name, NULL));
    max_rank = MAX(max_rank, rank);
  }
  if (max_rank < 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s %s: no Chakra execution trace in the folder (PREFIX.RANK.et files)", what, dir);
    return NULL;
  }
  t->n_ranks = (uint32_t)max_rank + 1;
  for (int64_t r = 0; r <= max_rank; r++)
    if (!g_hash_table_contains(files, &r)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s %s: rank %" G_GINT64_FORMAT " is missing (%s.%" G_GINT64_FORMAT ".et; the "
                  "folder has ranks up to %" G_GINT64_FORMAT ")", what, dir, r, prefix, r,
                  max_rank);
      return NULL;
    }
  g_autoptr(GHashTable) index = NULL;
  g_autofree char *gpath = g_build_filename(dir, "comm_group.json", NULL);
  if (g_file_test(gpath, G_FILE_TEST_EXISTS)) {
    t->groups_path = g_steal_pointer(&gpath);
    index = g_hash_table_new(g_str_hash, g_str_equal);
    if (!load_groups(t, index, error))
      return NULL;
  }
  t->ranks = g_new0(wl_chakra_rank, t->n_ranks);
  uint64_t budget = WL_CHAKRA_MAX_NODES;
  for (int64_t r = 0; r <= max_rank; r++) {
    const char *path = g_hash_table_lookup(files, &r);
    if (!wl_chakra__read_rank(path, index, t->names, &budget, &t->ranks[r], error))
      return NULL;
    t->n_nodes += t->ranks[r].n_nodes;
  }
  return g_steal_pointer(&t);
}
