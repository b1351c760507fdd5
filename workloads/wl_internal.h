/* Internal structures of workloads/, shared by the graph, cost, zoo and file-format code and
 * visible to the tests. Not part of the public interface. */
#ifndef DTSIM_WL_INTERNAL_H
#define DTSIM_WL_INTERNAL_H

#include <json-glib/json-glib.h>

#include "workloads.h"

/* One layer of a model as declared, plus what wl_model_finish() infers at batch 1. */
typedef struct {
  char *name;
  wl_layer_kind kind;
  wl_hparams hp;
  int n_parents;
  int *parents;               /* indices into the model's layers; -1 is the network input */
  int line;                   /* line in the source file, 0 if not from a file */
  /* Inferred by wl_model_finish(): */
  uint32_t in_c, in_h, in_w;  /* shape of the (first) input; concat: channels summed */
  uint32_t out_c, out_h, out_w;
  uint32_t pad_top, pad_left; /* padding before the first row/column actually used */
  uint64_t params;
  int n_children;
} wl_spec;

struct wl_model {
  char *name;
  char *source;               /* file the model came from, or NULL */
  uint32_t in_c, in_h, in_w;
  GArray *specs;              /* wl_spec, in topological order once finished */
  gboolean finished;
};

/* Output size along one dimension; 0 if the window does not fit, or if the output or the
 * padding before it would pass 2^32 - 1 (the caller reports it). */
uint32_t wl__out_size(uint32_t in, uint32_t k, uint32_t s, uint32_t pad, uint32_t dil,
                      gboolean same, gboolean ceil_mode, uint32_t *pad_before);
/* Pairs (output position p, kernel tap r) whose input row p*s + r*d - pad lies inside [0, in):
 * the multiply-adds per output channel and input channel of a convolution's backward passes
 * along one dimension, taps that fall in the padding excluded. */
uint64_t wl__valid_taps(uint32_t in, uint32_t out, uint32_t k, uint32_t s, uint32_t dil,
                        uint32_t pad_before);

/* Line of the first occurrence of the quoted string "needle" in text (1-based), 0 if absent;
 * a scan of the whole text, for one message, never once per layer. */
int wl__find_line(const char *text, const char *needle);
/* 1-based line of position `hit` in text, and its 1-based column in *col when not NULL. */
int wl__line_of(const char *text, const char *hit, int *col);

/* A member that is a string, or NULL when it is absent or not a string. */
const char *wl__json_string(JsonObject *o, const char *key);
/* A member that is a number: FALSE when it is absent or not a number. */
gboolean wl__json_number(JsonObject *o, const char *key, double *out);

wl_model *wl__load_json(const char *source, JsonNode *root, const char *text, GError **error);
wl_model *wl__load_paleo(const char *source, JsonNode *root, const char *text, GError **error);

#endif
