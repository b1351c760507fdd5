/* workloads/: what is trained, independent of any device.
 *
 * A wl_model is a layer graph (a DAG: branches and joins) read from the zoo, from our JSON
 * workload format or from a Paleo network file. It holds hyper-parameters only. A wl_net is
 * that model instantiated for one per-device batch size and one precision: shapes inferred,
 * layers in a topological order, and for every layer the exact cost (wl_op_cost) of each pass:
 * forward, backward w.r.t. data, backward w.r.t. weights, and the optimizer update.
 *
 * Units: FLOPs count 2 per multiply-add; bytes are bytes; shapes are per sample (C, H, W).
 * Element sizes: activations and their gradients use wl_precision_bytes(); weights are read at
 * that size by the passes; fp16/bf16 keep an fp32 master copy and fp16/bf16 gradients; fp32,
 * tf32 and amp keep fp32 weights and fp32 gradients. Optimizer state is fp32. */
#ifndef DTSIM_WORKLOADS_H
#define DTSIM_WORKLOADS_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "wl_op.h"

/* ---- Layer kinds and hyper-parameters ---------------------------------------------------- */

typedef enum {
  WL_LAYER_CONV,        /* 2-D convolution: stride, padding, dilation, groups, optional bias */
  WL_LAYER_FC,          /* fully connected (flattens a C x H x W input), optional bias */
  WL_LAYER_MAXPOOL,
  WL_LAYER_AVGPOOL,
  WL_LAYER_GLOBALPOOL,  /* global average pooling to C x 1 x 1 */
  WL_LAYER_LRN,         /* local response normalization across channels */
  WL_LAYER_BATCHNORM,   /* training-mode batch normalization with scale and shift */
  WL_LAYER_RELU,
  WL_LAYER_SIGMOID,
  WL_LAYER_TANH,
  WL_LAYER_DROPOUT,
  WL_LAYER_CONCAT,      /* along channels */
  WL_LAYER_ADD,         /* element-wise sum of its parents (residual joins) */
  WL_LAYER_FLATTEN,
  WL_LAYER_SOFTMAX,     /* softmax with cross-entropy loss: the end of the network */
  WL_LAYER_KIND_COUNT
} wl_layer_kind;

/* Name used in files and tables ("conv", "fc", "maxpool", ...); "?" when out of range. */
const char *wl_layer_kind_name(wl_layer_kind k);
/* -1 if the name is unknown. */
int wl_layer_kind_parse(const char *name);

/* Hyper-parameters of a layer; each kind reads the fields it needs (see docs/workloads.md).
 * wl_hparams_default() gives kernel/stride/dilation/groups 1, no padding, bias on. */
typedef struct {
  uint32_t out;           /* conv: output channels; fc: output features */
  uint32_t kh, kw;        /* kernel (conv, pools) */
  uint32_t sh, sw;        /* stride */
  uint32_t ph, pw;        /* padding on each side (explicit padding) */
  gboolean pad_same;      /* TensorFlow "SAME" padding: output = ceil(input / stride) */
  uint32_t dh, dw;        /* dilation (conv) */
  uint32_t groups;        /* conv groups */
  gboolean bias;          /* conv, fc */
  gboolean ceil_mode;     /* pools: round the output size up (PyTorch ceil_mode) */
  uint32_t lrn_size;      /* LRN: channels in the window */
  double drop_rate;       /* dropout: fraction of elements dropped, in [0, 1) */
} wl_hparams;

wl_hparams wl_hparams_default(void);

/* ---- Models -------------------------------------------------------------------------------- */

typedef struct wl_model wl_model;

/* An empty model whose input is `channels` x `height` x `width` per sample. */
wl_model *wl_model_new(const char *name, uint32_t channels, uint32_t height, uint32_t width);
void wl_model_free(wl_model *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(wl_model, wl_model_free)

/* Appends a layer; `parents` are indices of earlier layers, -1 for the network input. Returns
 * the new layer's index. Names must be unique (checked by wl_model_finish). */
int wl_model_add(wl_model *m, const char *name, wl_layer_kind kind, const wl_hparams *hp,
                 const int *parents, int n_parents);
/* Checks names and parents, orders the layers topologically (declaration order among ready
 * layers) and infers shapes at batch 1. Errors (DT_ERROR_INPUT) name the layer. Loaders call
 * it; builders of models in code call it once after the last wl_model_add(). */
gboolean wl_model_finish(wl_model *m, GError **error);

/* Loads a model: a zoo name, or a file in our JSON format or in Paleo's (detected from the
 * content). Errors name the file and the line or layer, code DT_ERROR_INPUT. */
wl_model *wl_model_load(const char *name_or_path, GError **error);
/* The same from text held in memory; `source` names it in messages. */
wl_model *wl_model_load_data(const char *source, const char *text, gsize len, GError **error);

const char *wl_model_name(const wl_model *m);
size_t wl_model_n_layers(const wl_model *m);
void wl_model_input_shape(const wl_model *m, uint32_t *c, uint32_t *h, uint32_t *w);

/* Writes the model in our JSON format (docs/workloads.md). */
gboolean wl_model_write_json(const wl_model *m, FILE *out, GError **error);
char *wl_model_to_json(const wl_model *m);

/* ---- The zoo ----------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  const char *description;
  wl_model *(*build)(void);
} wl_zoo_entry;

/* The zoo in a fixed order; *n receives its length. */
const wl_zoo_entry *wl_zoo(size_t *n);
/* NULL with a DT_ERROR_INPUT error listing the zoo if the name is unknown. */
wl_model *wl_zoo_build(const char *name, GError **error);

/* ---- Instantiated networks --------------------------------------------------------------- */

typedef enum {
  WL_OPT_SGD,           /* plain SGD: w -= lr g */
  WL_OPT_SGD_MOMENTUM,  /* v = mu v + g; w -= lr v */
  WL_OPT_ADAM,
  WL_OPT_COUNT
} wl_optimizer;

const char *wl_optimizer_name(wl_optimizer o);
/* "sgd", "momentum" (or "sgd-momentum"), "adam"; -1 if unknown. */
int wl_optimizer_parse(const char *name);

/* One layer of an instantiated net. Passes that a layer does not run (backward-weights of a
 * layer without parameters, backward-data of a layer with nothing trainable upstream, such as
 * the first layer) have has_pass FALSE and a zero cost. */
typedef struct {
  const char *name;
  wl_layer_kind kind;
  const wl_hparams *hp;
  int n_parents;
  const int *parents;          /* indices of earlier layers of the net; -1: the network input */
  int n_children;              /* layers that read this layer's output */
  uint32_t in_c, in_h, in_w;   /* input shape per sample (first parent; concat: summed channels) */
  uint32_t out_c, out_h, out_w;/* output shape per sample */
  uint64_t out_elems;          /* output elements for the whole batch */
  uint64_t params;             /* trainable parameters */
  uint64_t macs;               /* forward multiply-adds of conv and fc layers (0 otherwise) */
  gboolean has_pass[WL_PASS_COUNT];
  /* Forward, backward-data, backward-weights, and the update with SGD and momentum (other
   * optimizers: wl_net_update_cost()). A layer read by several children sums their gradients
   * in its first backward pass. */
  wl_op_cost cost[WL_PASS_COUNT];
  uint64_t saved_bytes;        /* activations kept from forward for backward */
  uint64_t param_bytes;        /* parameters as the passes read them */
  uint64_t grad_bytes;         /* gradients as they are reduced between devices */
} wl_layer;

typedef struct wl_net wl_net;

/* Instantiates `m` for a per-device batch of `batch` samples at `precision`. The net borrows
 * the model, which must outlive it. About 0.1 us per layer (ResNet-152: about 45 us). */
wl_net *wl_net_new(const wl_model *m, uint32_t batch, wl_precision precision, GError **error);
void wl_net_free(wl_net *net);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(wl_net, wl_net_free)

const wl_model *wl_net_model(const wl_net *net);
uint32_t wl_net_batch(const wl_net *net);
wl_precision wl_net_precision(const wl_net *net);
size_t wl_net_n_layers(const wl_net *net);
/* Layers come in a topological order: parents before children. */
const wl_layer *wl_net_layer(const wl_net *net, size_t i);
/* The parameters of a layer's second variable, as frameworks create one variable per weight
 * and bias (TensorFlow: conv and fc kernel then bias; batch norm beta and gamma, equal): the
 * bias of a conv or fc layer, half of a batch norm's; 0 for a layer with one variable or
 * none. */
uint64_t wl_layer_second_params(const wl_layer *l);

/* The update pass of layer i for an optimizer (has_pass[UPDATE] says whether there is one). */
void wl_net_update_cost(const wl_net *net, size_t i, wl_optimizer opt, wl_op_cost *out);

typedef struct {
  uint64_t params;
  uint64_t macs;                  /* forward multiply-adds of conv and fc layers */
  uint64_t forward_flops;
  uint64_t backward_flops;        /* backward-data + backward-weights */
  uint64_t forward_bytes;         /* read + written */
  uint64_t backward_bytes;
  uint64_t saved_bytes;           /* activations kept for backward */
  uint64_t param_bytes;
  uint64_t grad_bytes;
} wl_totals;

void wl_net_totals(const wl_net *net, wl_totals *out);
/* Sums pass `pass` of layers [first, last] (inclusive, e.g. one pipeline stage) into *out:
 * FLOPs, bytes and out_elems add up; the kind, GEMM shape and kernel geometry are those of
 * the layer with the most FLOPs. The update pass sums SGD with momentum. */
void wl_net_sum_range(const wl_net *net, size_t first, size_t last, wl_pass pass,
                      wl_op_cost *out);

/* Bytes of one input sample as copied from host to device. */
uint64_t wl_net_input_bytes_per_sample(const wl_net *net);

typedef struct {
  uint64_t weights_bytes;      /* parameters (and the fp32 master copy for fp16/bf16) */
  uint64_t gradients_bytes;
  uint64_t optimizer_bytes;    /* momentum, or Adam's two moments, in fp32 */
  uint64_t activations_bytes;  /* saved for backward, plus the input batch */
  uint64_t workspace_bytes;    /* the largest transient set of gradient buffers */
  uint64_t total_bytes;
} wl_memory;

void wl_net_memory(const wl_net *net, wl_optimizer opt, wl_memory *out);

#endif
