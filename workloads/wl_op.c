/* Names and sizes of the enumerations of wl_op.h. */
#include "wl_op.h"

#include <string.h>

static const char *const precision_names[WL_PREC_COUNT] = {"fp32", "tf32", "fp16", "bf16", "amp", "fp8"};
static const char *const pass_names[WL_PASS_COUNT] = {"forward", "backward-data",
                                                      "backward-weights", "update"};
static const char *const kind_names[WL_OP_KIND_COUNT] = {
    "conv", "gemm", "pool", "lrn", "batchnorm", "elementwise", "concat", "softmax", "update",
    "attention"};

const char *wl_precision_name(wl_precision p) { return p < WL_PREC_COUNT ? precision_names[p] : "?"; }
const char *wl_pass_name(wl_pass p) { return p < WL_PASS_COUNT ? pass_names[p] : "?"; }
const char *wl_op_kind_name(wl_op_kind k) { return k < WL_OP_KIND_COUNT ? kind_names[k] : "?"; }

int wl_precision_parse(const char *name)
{
  for (int i = 0; i < WL_PREC_COUNT; i++)
    if (name && strcmp(name, precision_names[i]) == 0)
      return i;
  return -1;
}

unsigned wl_precision_bytes(wl_precision p)
{
  /* tf32 keeps fp32 storage; amp stores activations in fp16. */
  switch (p) {
  case WL_PREC_FP16:
  case WL_PREC_BF16:
  case WL_PREC_AMP:
  case WL_PREC_FP8:
    return 2;
  default:
    return 4;
  }
}
