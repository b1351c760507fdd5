/* Writing Chakra execution traces (see chakra_out.h), with the protobuf-c code generated from
 * workloads/chakra/et_def.proto. */
#include "chakra_out.h"

#include "et_def.pb-c.h"
#include "util.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct trace_chakra_out {
  char *dir, *prefix, *what;
  dt_outfile *file;           /* the rank being written, or NULL */
  GString *groups;            /* comm_group.json's members, written by _close */
  char *algorithm;            /* the global metadata's comm_algorithm, or NULL */
  guint8 *buf;
  size_t cap;
};

gboolean trace_chakra_out_check(const char *dir, const char *what, GError **error)
{
  if (g_mkdir_with_parents(dir, 0777) != 0 || !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s %s: not a folder that can be made (%s)",
                what, dir, g_strerror(errno));
    return FALSE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s %s: %s", what, dir, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

trace_chakra_out *trace_chakra_out_new(const char *dir, const char *prefix, const char *what,
                                       GError **error)
{
  if (!trace_chakra_out_check(dir, what, error))
    return NULL;
  trace_chakra_out *w = g_new0(trace_chakra_out, 1);
  w->dir = g_strdup(dir);
  w->prefix = g_strdup(prefix);
  w->what = g_strdup(what);
  w->groups = g_string_new(NULL);
  return w;
}

void trace_chakra_out_free(trace_chakra_out *w)
{
  if (!w)
    return;
  dt_outfile_free(w->file);
  g_string_free(w->groups, TRUE);
  g_free(w->buf);
  g_free(w->dir);
  g_free(w->prefix);
  g_free(w->what);
  g_free(w->algorithm);
  g_free(w);
}

static void put_varint(FILE *f, uint64_t v)
{
  do {
    int c = (int)(v & 0x7f);
    v >>= 7;
    putc_unlocked(v ? c | 0x80 : c, f);
  } while (v);
}

/* Writes one message: its length as a varint, then its bytes. */
static void put_message(trace_chakra_out *w, const ProtobufCMessage *m)
{
  size_t len = protobuf_c_message_get_packed_size(m);
  if (len > w->cap) {
    w->cap = MAX(len, 2 * w->cap);
    w->buf = g_realloc(w->buf, w->cap);
  }
  protobuf_c_message_pack(m, w->buf);
  FILE *f = dt_outfile_stream(w->file);
  put_varint(f, len);
  fwrite(w->buf, 1, len, f);
}

void trace_chakra_out_set_algorithm(trace_chakra_out *w, const char *name)
{
  g_free(w->algorithm);
  w->algorithm = g_strdup(name);
}

gboolean trace_chakra_out_begin(trace_chakra_out *w, uint32_t rank, GError **error)
{
  g_return_val_if_fail(w->file == NULL, FALSE);
  g_autofree char *name = g_strdup_printf("%s.%u.et", w->prefix, rank);
  g_autofree char *path = g_build_filename(w->dir, name, NULL);
  w->file = dt_outfile_open(path, error);
  if (!w->file)
    return FALSE;
  ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
  meta.version = (char *)"0.0.4";
  ChakraProtoMsg__AttributeProto schema = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT;
  schema.name = (char *)"schema";
  schema.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
  schema.string_val = (char *)"dtsim " DTSIM_VERSION;
  ChakraProtoMsg__AttributeProto algorithm = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT;
  algorithm.name = (char *)"comm_algorithm";
  algorithm.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
  algorithm.string_val = w->algorithm;
  ChakraProtoMsg__AttributeProto *attrs[] = {&schema, &algorithm};
  meta.n_attr = w->algorithm ? 2 : 1;
  meta.attr = attrs;
  put_message(w, &meta.base);
  return TRUE;
}

typedef enum { ATTR_INT64, ATTR_UINT64, ATTR_INT32, ATTR_BOOL, ATTR_STRING } attr_kind;

static void set_attr(ChakraProtoMsg__AttributeProto *a, const char *name, attr_kind kind,
                     int64_t v, const char *s)
{
  chakra_proto_msg__attribute_proto__init(a);
  a->name = (char *)name;
  switch (kind) {
  case ATTR_INT64:
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
    break;
  case ATTR_UINT64:
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
    a->uint64_val = (uint64_t)v;
    break;
  case ATTR_INT32:
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
    a->int32_val = (int32_t)v;
    break;
  case ATTR_BOOL:
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v != 0;
    break;
  case ATTR_STRING:
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)s;
    break;
  }
}

gboolean trace_chakra_out_node(trace_chakra_out *w, const trace_chakra_node *n, GError **error)
{
  (void)error;
  g_return_val_if_fail(w->file != NULL, FALSE);
  ChakraProtoMsg__Node m = CHAKRA_PROTO_MSG__NODE__INIT;
  m.id = n->id;
  m.name = (char *)(n->name ? n->name : "");
  m.type = (ChakraProtoMsg__NodeType)n->type;
  m.n_data_deps = n->n_data_deps;
  m.data_deps = (uint64_t *)n->data_deps;
  m.n_ctrl_deps = n->n_ctrl_deps;
  m.ctrl_deps = (uint64_t *)n->ctrl_deps;
  m.duration_micros = n->duration_micros;
  /* The attributes as Chakra's converter and feeder type them: is_cpu_op bool, num_ops and
   * comm_type and comm_size int64, tensor_size uint64, comm_src/dst/tag int32, pg_name string. */
  ChakraProtoMsg__AttributeProto a[8];
  ChakraProtoMsg__AttributeProto *ap[8];
  size_t k = 0;
  set_attr(&a[k++], "is_cpu_op", ATTR_BOOL, n->is_cpu_op, NULL);
  if (n->type == WL_CHAKRA_COMP) {
    if (n->num_ops)
      set_attr(&a[k++], "num_ops", ATTR_INT64, (int64_t)n->num_ops, NULL);
    if (n->tensor_size)
      set_attr(&a[k++], "tensor_size", ATTR_UINT64, (int64_t)n->tensor_size, NULL);
    if (n->stream >= 0)
      set_attr(&a[k++], "stream", ATTR_INT64, n->stream, NULL);
  } else if (n->type == WL_CHAKRA_COLL) {
    set_attr(&a[k++], "comm_type", ATTR_INT64, n->comm_type, NULL);
    set_attr(&a[k++], "comm_size", ATTR_INT64, (int64_t)n->comm_size, NULL);
    if (n->pg_name)
      set_attr(&a[k++], "pg_name", ATTR_STRING, 0, n->pg_name);
  } else if (n->type == WL_CHAKRA_SEND || n->type == WL_CHAKRA_RECV) {
    set_attr(&a[k++], "comm_src", ATTR_INT32, n->comm_src, NULL);
    set_attr(&a[k++], "comm_dst", ATTR_INT32, n->comm_dst, NULL);
    set_attr(&a[k++], "comm_tag", ATTR_INT32, n->comm_tag, NULL);
    set_attr(&a[k++], "comm_size", ATTR_INT64, (int64_t)n->comm_size, NULL);
  }
  for (size_t i = 0; i < k; i++)
    ap[i] = &a[i];
  m.n_attr = k;
  m.attr = ap;
  put_message(w, &m.base);
  return TRUE;
}

gboolean trace_chakra_out_end(trace_chakra_out *w, GError **error)
{
  g_return_val_if_fail(w->file != NULL, FALSE);
  gboolean ok = dt_outfile_commit(w->file, error);
  g_clear_pointer(&w->file, dt_outfile_free);
  return ok;
}

void trace_chakra_out_group(trace_chakra_out *w, const char *name, const uint32_t *ranks,
                            uint32_t n)
{
  g_string_append(w->groups, w->groups->len ? ",\n  " : "{\n  ");
  dt_json_string(w->groups, name);
  g_string_append(w->groups, ": [");
  for (uint32_t i = 0; i < n; i++)
    g_string_append_printf(w->groups, i ? ", %u" : "%u", ranks[i]);
  g_string_append_c(w->groups, ']');
}

gboolean trace_chakra_out_close(trace_chakra_out *w, GError **error)
{
  g_return_val_if_fail(w->file == NULL, FALSE);
  g_autofree char *path = g_build_filename(w->dir, "comm_group.json", NULL);
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  fputs(w->groups->len ? w->groups->str : "{", dt_outfile_stream(out));
  fputs(w->groups->len ? "\n}\n" : "}\n", dt_outfile_stream(out));
  return dt_outfile_commit(out, error);
}
