/* The model zoo: well-known networks built layer by layer. Sources are given beside each
 * builder and in docs/workloads.md. Auxiliary classifier heads are left out; every model ends
 * in softmax with cross-entropy loss. Where torchvision has an implementation it is followed
 * exactly (batch-normalized convolutions without bias, ceil-mode pools), so parameter counts
 * equal torchvision's. */
#include "wl_internal.h"
#include "wl_transformer.h"
#include "util.h"

#include <string.h>

/* ---- Builder helpers: each appends one layer (or a few) and returns the last index. ------ */

static int add1(wl_model *m, const char *name, wl_layer_kind kind, const wl_hparams *hp,
                int parent)
{
  return wl_model_add(m, name, kind, hp, &parent, 1);
}

static int conv_full(wl_model *m, const char *name, int parent, uint32_t out, uint32_t kh,
                     uint32_t kw, uint32_t sh, uint32_t sw, uint32_t ph, uint32_t pw,
                     gboolean bias)
{
  wl_hparams hp = wl_hparams_default();
  hp.out = out;
  hp.kh = kh, hp.kw = kw, hp.sh = sh, hp.sw = sw, hp.ph = ph, hp.pw = pw;
  hp.bias = bias;
  return add1(m, name, WL_LAYER_CONV, &hp, parent);
}

/* Square convolution with bias followed by ReLU. */
static int conv_relu(wl_model *m, const char *name, int parent, uint32_t out, uint32_t k,
                     uint32_t s, uint32_t p)
{
  int c = conv_full(m, name, parent, out, k, k, s, s, p, p, TRUE);
  g_autofree char *rn = g_strconcat(name, "/relu", NULL);
  return add1(m, rn, WL_LAYER_RELU, NULL, c);
}

static int simple(wl_model *m, const char *name, wl_layer_kind kind, int parent)
{
  return add1(m, name, kind, NULL, parent);
}

static int pool(wl_model *m, const char *name, wl_layer_kind kind, int parent, uint32_t k,
                uint32_t s, uint32_t p, gboolean ceil_mode)
{
  wl_hparams hp = wl_hparams_default();
  hp.kh = hp.kw = k;
  hp.sh = hp.sw = s;
  hp.ph = hp.pw = p;
  hp.ceil_mode = ceil_mode;
  return add1(m, name, kind, &hp, parent);
}

static int fc(wl_model *m, const char *name, int parent, uint32_t out)
{
  wl_hparams hp = wl_hparams_default();
  hp.out = out;
  return add1(m, name, WL_LAYER_FC, &hp, parent);
}

static int fc_relu(wl_model *m, const char *name, int parent, uint32_t out)
{
  int f = fc(m, name, parent, out);
  g_autofree char *rn = g_strconcat(name, "/relu", NULL);
  return add1(m, rn, WL_LAYER_RELU, NULL, f);
}

/* Convolution without bias, batch normalization and (optionally) ReLU: torchvision's
 * BasicConv2d and the conv-bn pairs of ResNet. */
static int conv_bn(wl_model *m, const char *name, int parent, uint32_t out, uint32_t kh,
                   uint32_t kw, uint32_t sh, uint32_t sw, uint32_t ph, uint32_t pw,
                   gboolean relu)
{
  int c = conv_full(m, name, parent, out, kh, kw, sh, sw, ph, pw, FALSE);
  g_autofree char *bn = g_strconcat(name, "/bn", NULL);
  c = add1(m, bn, WL_LAYER_BATCHNORM, NULL, c);
  if (relu) {
    g_autofree char *rn = g_strconcat(name, "/relu", NULL);
    c = add1(m, rn, WL_LAYER_RELU, NULL, c);
  }
  return c;
}

static int cbr(wl_model *m, const char *name, int parent, uint32_t out, uint32_t k, uint32_t s,
               uint32_t p)
{
  return conv_bn(m, name, parent, out, k, k, s, s, p, p, TRUE);
}

static int join(wl_model *m, const char *name, wl_layer_kind kind, const int *parents, int n)
{
  return wl_model_add(m, name, kind, NULL, parents, n);
}

static wl_model *finish(wl_model *m)
{
  g_autoptr(GError) error = NULL;
  if (!wl_model_finish(m, &error))
    g_error("zoo model '%s' is inconsistent: %s", m->name, error->message);
  return m;
}

static wl_model *classifier_end(wl_model *m, int last)
{
  simple(m, "softmax", WL_LAYER_SOFTMAX, last);
  return finish(m);
}

/* The fully connected tail of AlexNet (one tower), VGG and OverFeat: flatten, fc6 (fc6_out
 * features) and fc7 (4096) each with ReLU and dropout after it, fc8 (1000 classes), loss. */
static wl_model *dense_head(wl_model *m, int x, uint32_t fc6_out)
{
  x = simple(m, "flatten", WL_LAYER_FLATTEN, x);
  x = fc_relu(m, "fc6", x, fc6_out);
  x = simple(m, "drop6", WL_LAYER_DROPOUT, x);
  x = fc_relu(m, "fc7", x, 4096);
  x = simple(m, "drop7", WL_LAYER_DROPOUT, x);
  x = fc(m, "fc8", x, 1000);
  return classifier_end(m, x);
}

/* ---- LeNet-5 ------------------------------------------------------------------------------ */

/* LeCun et al. 1998 with full connections between the convolution maps, ReLU and max pooling
 * as modern re-implementations use; 32x32 input; 61,706 parameters. */
static wl_model *build_lenet5(void)
{
  wl_model *m = wl_model_new("lenet5", 1, 32, 32);
  int x = conv_relu(m, "conv1", -1, 6, 5, 1, 0);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
  x = conv_relu(m, "conv2", x, 16, 5, 1, 0);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
  x = simple(m, "flatten", WL_LAYER_FLATTEN, x);
  x = fc_relu(m, "fc1", x, 120);
  x = fc_relu(m, "fc2", x, 84);
  x = fc(m, "fc3", x, 10);
  return classifier_end(m, x);
}

/* ---- AlexNet ------------------------------------------------------------------------------ */

/* torchvision.models.alexnet: 64-192-384-256-256 filters; the adaptive 6x6 average pool is an
 * identity at 224x224 and is left out. */
static wl_model *build_alexnet(void)
{
  wl_model *m = wl_model_new("alexnet", 3, 224, 224);
  int x = conv_relu(m, "conv1", -1, 64, 11, 4, 2);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = conv_relu(m, "conv2", x, 192, 5, 1, 2);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = conv_relu(m, "conv3", x, 384, 3, 1, 1);
  x = conv_relu(m, "conv4", x, 256, 3, 1, 1);
  x = conv_relu(m, "conv5", x, 256, 3, 1, 1);
  x = pool(m, "pool5", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = simple(m, "flatten", WL_LAYER_FLATTEN, x);
  x = simple(m, "drop6", WL_LAYER_DROPOUT, x);
  x = fc_relu(m, "fc6", x, 4096);
  x = simple(m, "drop7", WL_LAYER_DROPOUT, x);
  x = fc_relu(m, "fc7", x, 4096);
  x = fc(m, "fc8", x, 1000);
  return classifier_end(m, x);
}

/* The one-tower AlexNet of Krizhevsky's "One weird trick" (arXiv:1404.5997) as TensorFlow's
 * tf_cnn_benchmarks and TF-slim's alexnet_v2 build it: 64-192-384-384-256 filters, a valid
 * 11x11 stride-4 first convolution on 224x224, 5x5x256 into fc6; 50,303,912 parameters. */
static wl_model *build_alexnet_owt(void)
{
  wl_model *m = wl_model_new("alexnet_owt", 3, 224, 224);
  int x = conv_relu(m, "conv1", -1, 64, 11, 4, 0);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = conv_relu(m, "conv2", x, 192, 5, 1, 2);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = conv_relu(m, "conv3", x, 384, 3, 1, 1);
  x = conv_relu(m, "conv4", x, 384, 3, 1, 1);
  x = conv_relu(m, "conv5", x, 256, 3, 1, 1);
  x = pool(m, "pool5", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  return dense_head(m, x, 4096);
}

/* ---- VGG ----------------------------------------------------------------------------------- */

/* torchvision.models.vgg11/16/19 (configurations A, D, E of Simonyan and Zisserman), without
 * batch normalization; the adaptive 7x7 pool is an identity at 224x224 and is left out. A zero
 * in the configuration is a max pool. */
static wl_model *build_vgg(const char *name, const uint32_t *cfg, size_t n)
{
  wl_model *m = wl_model_new(name, 3, 224, 224);
  int x = -1, block = 1, in_block = 0;
  for (size_t i = 0; i < n; i++) {
    if (cfg[i] == 0) {
      g_autofree char *pn = g_strdup_printf("pool%d", block);
      x = pool(m, pn, WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
      block++, in_block = 0;
    } else {
      g_autofree char *cn = g_strdup_printf("conv%d_%d", block, ++in_block);
      x = conv_relu(m, cn, x, cfg[i], 3, 1, 1);
    }
  }
  return dense_head(m, x, 4096);
}

static wl_model *build_vgg11(void)
{
  static const uint32_t cfg[] = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  return build_vgg("vgg11", cfg, G_N_ELEMENTS(cfg));
}

static wl_model *build_vgg16(void)
{
  static const uint32_t cfg[] = {64,  64,  0,   128, 128, 0,   256, 256, 256,
                                 0,   512, 512, 512, 0,   512, 512, 512, 0};
  return build_vgg("vgg16", cfg, G_N_ELEMENTS(cfg));
}

static wl_model *build_vgg19(void)
{
  static const uint32_t cfg[] = {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                 512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
  return build_vgg("vgg19", cfg, G_N_ELEMENTS(cfg));
}

/* ---- Network in Network ------------------------------------------------------------------ */

/* Lin, Chen and Yan, "Network In Network" (ICLR 2014), ImageNet model of the Caffe model zoo
 * (mavenlin's train_val.prototxt): three 1x1 "cccp" layers after each convolution, Caffe's
 * ceil-mode 3x3/2 pools, and global average pooling over the 1000 class maps; 224x224. */
static wl_model *build_nin(void)
{
  wl_model *m = wl_model_new("nin", 3, 224, 224);
  int x = conv_relu(m, "conv1", -1, 96, 11, 4, 0);
  x = conv_relu(m, "cccp1", x, 96, 1, 1, 0);
  x = conv_relu(m, "cccp2", x, 96, 1, 1, 0);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = conv_relu(m, "conv2", x, 256, 5, 1, 2);
  x = conv_relu(m, "cccp3", x, 256, 1, 1, 0);
  x = conv_relu(m, "cccp4", x, 256, 1, 1, 0);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = conv_relu(m, "conv3", x, 384, 3, 1, 1);
  x = conv_relu(m, "cccp5", x, 384, 1, 1, 0);
  x = conv_relu(m, "cccp6", x, 384, 1, 1, 0);
  x = pool(m, "pool3", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = simple(m, "drop", WL_LAYER_DROPOUT, x);
  x = conv_relu(m, "conv4", x, 1024, 3, 1, 1);
  x = conv_relu(m, "cccp7", x, 1024, 1, 1, 0);
  x = conv_relu(m, "cccp8", x, 1000, 1, 1, 0);
  x = simple(m, "pool4", WL_LAYER_GLOBALPOOL, x);
  return classifier_end(m, x);
}

/* ---- OverFeat ------------------------------------------------------------------------------ */

/* Sermanet et al., "OverFeat" (ICLR 2014), the "fast" model of Table 1: 231x231 input,
 * 96-256-512-1024-1024 filters, 2x2 pools, fc 3072-4096-1000. */
static wl_model *build_overfeat(void)
{
  wl_model *m = wl_model_new("overfeat", 3, 231, 231);
  int x = conv_relu(m, "conv1", -1, 96, 11, 4, 0);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
  x = conv_relu(m, "conv2", x, 256, 5, 1, 0);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
  x = conv_relu(m, "conv3", x, 512, 3, 1, 1);
  x = conv_relu(m, "conv4", x, 1024, 3, 1, 1);
  x = conv_relu(m, "conv5", x, 1024, 3, 1, 1);
  x = pool(m, "pool5", WL_LAYER_MAXPOOL, x, 2, 2, 0, FALSE);
  return dense_head(m, x, 3072);
}

/* ---- GoogLeNet ----------------------------------------------------------------------------- */

/* One inception module of torchvision.models.googlenet (which, unlike the paper, uses a 3x3
 * convolution in the "5x5" branch); all convolutions are BasicConv2d. */
static int inception_v1(wl_model *m, const char *name, int x, uint32_t c1, uint32_t c3r,
                        uint32_t c3, uint32_t c5r, uint32_t c5, uint32_t pp)
{
  int br[4];
  g_autofree char *n1 = g_strconcat(name, "/b1", NULL);
  g_autofree char *n2a = g_strconcat(name, "/b2a", NULL);
  g_autofree char *n2b = g_strconcat(name, "/b2b", NULL);
  g_autofree char *n3a = g_strconcat(name, "/b3a", NULL);
  g_autofree char *n3b = g_strconcat(name, "/b3b", NULL);
  g_autofree char *n4p = g_strconcat(name, "/b4pool", NULL);
  g_autofree char *n4 = g_strconcat(name, "/b4", NULL);
  g_autofree char *nc = g_strconcat(name, "/concat", NULL);
  br[0] = cbr(m, n1, x, c1, 1, 1, 0);
  br[1] = cbr(m, n2b, cbr(m, n2a, x, c3r, 1, 1, 0), c3, 3, 1, 1);
  br[2] = cbr(m, n3b, cbr(m, n3a, x, c5r, 1, 1, 0), c5, 3, 1, 1);
  br[3] = cbr(m, n4, pool(m, n4p, WL_LAYER_MAXPOOL, x, 3, 1, 1, TRUE), pp, 1, 1, 0);
  return join(m, nc, WL_LAYER_CONCAT, br, 4);
}

/* torchvision.models.googlenet without the auxiliary heads: 6,624,904 parameters. */
static wl_model *build_googlenet(void)
{
  wl_model *m = wl_model_new("googlenet", 3, 224, 224);
  int x = cbr(m, "conv1", -1, 64, 7, 2, 3);
  x = pool(m, "pool1", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = cbr(m, "conv2", x, 64, 1, 1, 0);
  x = cbr(m, "conv3", x, 192, 3, 1, 1);
  x = pool(m, "pool2", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = inception_v1(m, "3a", x, 64, 96, 128, 16, 32, 32);
  x = inception_v1(m, "3b", x, 128, 128, 192, 32, 96, 64);
  x = pool(m, "pool3", WL_LAYER_MAXPOOL, x, 3, 2, 0, TRUE);
  x = inception_v1(m, "4a", x, 192, 96, 208, 16, 48, 64);
  x = inception_v1(m, "4b", x, 160, 112, 224, 24, 64, 64);
  x = inception_v1(m, "4c", x, 128, 128, 256, 24, 64, 64);
  x = inception_v1(m, "4d", x, 112, 144, 288, 32, 64, 64);
  x = inception_v1(m, "4e", x, 256, 160, 320, 32, 128, 128);
  x = pool(m, "pool4", WL_LAYER_MAXPOOL, x, 2, 2, 0, TRUE);
  x = inception_v1(m, "5a", x, 256, 160, 320, 32, 128, 128);
  x = inception_v1(m, "5b", x, 384, 192, 384, 48, 128, 128);
  x = simple(m, "avgpool", WL_LAYER_GLOBALPOOL, x);
  x = simple(m, "dropout", WL_LAYER_DROPOUT, x);
  x = fc(m, "fc", x, 1000);
  return classifier_end(m, x);
}

/* ---- Inception v3 ------------------------------------------------------------------------ */

/* Names a layer of module `mod`: "Mixed_5b/branch1x1". */
static const char *module_name(char *buf, size_t size, const char *mod, const char *what)
{
  g_strlcpy(buf, mod, size);
  g_strlcat(buf, "/", size);
  g_strlcat(buf, what, size);
  return buf;
}
#define NM(buf, mod, what) module_name(buf, sizeof(buf), mod, what)

static int avgpool_3x3_s1(wl_model *m, const char *name, int x)
{
  return pool(m, name, WL_LAYER_AVGPOOL, x, 3, 1, 1, FALSE);
}

static int inc_a(wl_model *m, const char *mod, int x, uint32_t pool_features)
{
  char b[128];
  int br[4];
  br[0] = cbr(m, NM(b, mod, "branch1x1"), x, 64, 1, 1, 0);
  br[1] = cbr(m, NM(b, mod, "branch5x5_1"), x, 48, 1, 1, 0);
  br[1] = cbr(m, NM(b, mod, "branch5x5_2"), br[1], 64, 5, 1, 2);
  br[2] = cbr(m, NM(b, mod, "branch3x3dbl_1"), x, 64, 1, 1, 0);
  br[2] = cbr(m, NM(b, mod, "branch3x3dbl_2"), br[2], 96, 3, 1, 1);
  br[2] = cbr(m, NM(b, mod, "branch3x3dbl_3"), br[2], 96, 3, 1, 1);
  br[3] = avgpool_3x3_s1(m, NM(b, mod, "branch_pool_avg"), x);
  br[3] = cbr(m, NM(b, mod, "branch_pool"), br[3], pool_features, 1, 1, 0);
  return join(m, NM(b, mod, "concat"), WL_LAYER_CONCAT, br, 4);
}

static int inc_b(wl_model *m, const char *mod, int x)
{
  char b[128];
  int br[3];
  br[0] = cbr(m, NM(b, mod, "branch3x3"), x, 384, 3, 2, 0);
  br[1] = cbr(m, NM(b, mod, "branch3x3dbl_1"), x, 64, 1, 1, 0);
  br[1] = cbr(m, NM(b, mod, "branch3x3dbl_2"), br[1], 96, 3, 1, 1);
  br[1] = cbr(m, NM(b, mod, "branch3x3dbl_3"), br[1], 96, 3, 2, 0);
  br[2] = pool(m, NM(b, mod, "branch_pool"), WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  return join(m, NM(b, mod, "concat"), WL_LAYER_CONCAT, br, 3);
}

/* 1x7 and 7x1 convolutions. */
static int c17(wl_model *m, const char *name, int x, uint32_t out)
{
  return conv_bn(m, name, x, out, 1, 7, 1, 1, 0, 3, TRUE);
}

static int c71(wl_model *m, const char *name, int x, uint32_t out)
{
  return conv_bn(m, name, x, out, 7, 1, 1, 1, 3, 0, TRUE);
}

static int inc_c(wl_model *m, const char *mod, int x, uint32_t c7)
{
  char b[128];
  int br[4];
  br[0] = cbr(m, NM(b, mod, "branch1x1"), x, 192, 1, 1, 0);
  br[1] = cbr(m, NM(b, mod, "branch7x7_1"), x, c7, 1, 1, 0);
  br[1] = c17(m, NM(b, mod, "branch7x7_2"), br[1], c7);
  br[1] = c71(m, NM(b, mod, "branch7x7_3"), br[1], 192);
  br[2] = cbr(m, NM(b, mod, "branch7x7dbl_1"), x, c7, 1, 1, 0);
  br[2] = c71(m, NM(b, mod, "branch7x7dbl_2"), br[2], c7);
  br[2] = c17(m, NM(b, mod, "branch7x7dbl_3"), br[2], c7);
  br[2] = c71(m, NM(b, mod, "branch7x7dbl_4"), br[2], c7);
  br[2] = c17(m, NM(b, mod, "branch7x7dbl_5"), br[2], 192);
  br[3] = avgpool_3x3_s1(m, NM(b, mod, "branch_pool_avg"), x);
  br[3] = cbr(m, NM(b, mod, "branch_pool"), br[3], 192, 1, 1, 0);
  return join(m, NM(b, mod, "concat"), WL_LAYER_CONCAT, br, 4);
}

static int inc_d(wl_model *m, const char *mod, int x)
{
  char b[128];
  int br[3];
  br[0] = cbr(m, NM(b, mod, "branch3x3_1"), x, 192, 1, 1, 0);
  br[0] = cbr(m, NM(b, mod, "branch3x3_2"), br[0], 320, 3, 2, 0);
  br[1] = cbr(m, NM(b, mod, "branch7x7x3_1"), x, 192, 1, 1, 0);
  br[1] = c17(m, NM(b, mod, "branch7x7x3_2"), br[1], 192);
  br[1] = c71(m, NM(b, mod, "branch7x7x3_3"), br[1], 192);
  br[1] = cbr(m, NM(b, mod, "branch7x7x3_4"), br[1], 192, 3, 2, 0);
  br[2] = pool(m, NM(b, mod, "branch_pool"), WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  return join(m, NM(b, mod, "concat"), WL_LAYER_CONCAT, br, 3);
}

static int inc_e(wl_model *m, const char *mod, int x)
{
  char b[128];
  int br[4], pair[2];
  br[0] = cbr(m, NM(b, mod, "branch1x1"), x, 320, 1, 1, 0);
  int t = cbr(m, NM(b, mod, "branch3x3_1"), x, 384, 1, 1, 0);
  pair[0] = conv_bn(m, NM(b, mod, "branch3x3_2a"), t, 384, 1, 3, 1, 1, 0, 1, TRUE);
  pair[1] = conv_bn(m, NM(b, mod, "branch3x3_2b"), t, 384, 3, 1, 1, 1, 1, 0, TRUE);
  br[1] = join(m, NM(b, mod, "branch3x3"), WL_LAYER_CONCAT, pair, 2);
  t = cbr(m, NM(b, mod, "branch3x3dbl_1"), x, 448, 1, 1, 0);
  t = cbr(m, NM(b, mod, "branch3x3dbl_2"), t, 384, 3, 1, 1);
  pair[0] = conv_bn(m, NM(b, mod, "branch3x3dbl_3a"), t, 384, 1, 3, 1, 1, 0, 1, TRUE);
  pair[1] = conv_bn(m, NM(b, mod, "branch3x3dbl_3b"), t, 384, 3, 1, 1, 1, 1, 0, TRUE);
  br[2] = join(m, NM(b, mod, "branch3x3dbl"), WL_LAYER_CONCAT, pair, 2);
  br[3] = avgpool_3x3_s1(m, NM(b, mod, "branch_pool_avg"), x);
  br[3] = cbr(m, NM(b, mod, "branch_pool"), br[3], 192, 1, 1, 0);
  return join(m, NM(b, mod, "concat"), WL_LAYER_CONCAT, br, 4);
}

/* torchvision.models.inception_v3 without the auxiliary head, 299x299: 23,834,568 parameters. */
static wl_model *build_inception_v3(void)
{
  wl_model *m = wl_model_new("inception_v3", 3, 299, 299);
  int x = cbr(m, "Conv2d_1a_3x3", -1, 32, 3, 2, 0);
  x = cbr(m, "Conv2d_2a_3x3", x, 32, 3, 1, 0);
  x = cbr(m, "Conv2d_2b_3x3", x, 64, 3, 1, 1);
  x = pool(m, "maxpool1", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = cbr(m, "Conv2d_3b_1x1", x, 80, 1, 1, 0);
  x = cbr(m, "Conv2d_4a_3x3", x, 192, 3, 1, 0);
  x = pool(m, "maxpool2", WL_LAYER_MAXPOOL, x, 3, 2, 0, FALSE);
  x = inc_a(m, "Mixed_5b", x, 32);
  x = inc_a(m, "Mixed_5c", x, 64);
  x = inc_a(m, "Mixed_5d", x, 64);
  x = inc_b(m, "Mixed_6a", x);
  x = inc_c(m, "Mixed_6b", x, 128);
  x = inc_c(m, "Mixed_6c", x, 160);
  x = inc_c(m, "Mixed_6d", x, 160);
  x = inc_c(m, "Mixed_6e", x, 192);
  x = inc_d(m, "Mixed_7a", x);
  x = inc_e(m, "Mixed_7b", x);
  x = inc_e(m, "Mixed_7c", x);
  x = simple(m, "avgpool", WL_LAYER_GLOBALPOOL, x);
  x = simple(m, "dropout", WL_LAYER_DROPOUT, x);
  x = fc(m, "fc", x, 1000);
  return classifier_end(m, x);
}

/* ---- ResNet -------------------------------------------------------------------------------- */

/* torchvision.models.resnet (v1.5: the stride sits on the 3x3 convolution of a bottleneck).
 * `bottleneck` selects Bottleneck (expansion 4) over BasicBlock; `v1` puts a bottleneck's
 * stride on its first 1x1 convolution instead, as He et al. 2015 (arXiv:1512.03385) and the
 * frameworks of 2015-2017 built it (Caffe's published models; TensorFlow's tf_cnn_benchmarks at
 * 9165a70, the version of TensorFlow's May 2017 benchmarks): the same parameters, the 1x1 and
 * the 3x3 of each stage's first block at the reduced resolution. */
static wl_model *build_resnet_v(const char *name, const int blocks[4], gboolean bottleneck,
                                gboolean v1)
{
  wl_model *m = wl_model_new(name, 3, 224, 224);
  int x = cbr(m, "conv1", -1, 64, 7, 2, 3);
  x = pool(m, "maxpool", WL_LAYER_MAXPOOL, x, 3, 2, 1, FALSE);
  uint32_t inplanes = 64, expansion = bottleneck ? 4 : 1;
  char b[128];
  for (int stage = 0; stage < 4; stage++) {
    uint32_t planes = 64u << stage;
    for (int blk = 0; blk < blocks[stage]; blk++) {
      uint32_t stride = (stage > 0 && blk == 0) ? 2 : 1;
      g_autofree char *mod = g_strdup_printf("layer%d.%d", stage + 1, blk);
      int y;
      if (bottleneck) {
        y = cbr(m, NM(b, mod, "conv1"), x, planes, 1, v1 ? stride : 1, 0);
        y = cbr(m, NM(b, mod, "conv2"), y, planes, 3, v1 ? 1 : stride, 1);
        y = conv_bn(m, NM(b, mod, "conv3"), y, planes * 4, 1, 1, 1, 1, 0, 0, FALSE);
      } else {
        y = cbr(m, NM(b, mod, "conv1"), x, planes, 3, stride, 1);
        y = conv_bn(m, NM(b, mod, "conv2"), y, planes, 3, 3, 1, 1, 1, 1, FALSE);
      }
      int shortcut = x;
      if (stride != 1 || inplanes != planes * expansion)
        shortcut = conv_bn(m, NM(b, mod, "downsample"), x, planes * expansion, 1, 1, stride,
                           stride, 0, 0, FALSE);
      int two[2] = {y, shortcut};
      x = join(m, NM(b, mod, "add"), WL_LAYER_ADD, two, 2);
      x = simple(m, NM(b, mod, "relu"), WL_LAYER_RELU, x);
      inplanes = planes * expansion;
    }
  }
  x = simple(m, "avgpool", WL_LAYER_GLOBALPOOL, x);
  x = fc(m, "fc", x, 1000);
  return classifier_end(m, x);
}

static wl_model *build_resnet(const char *name, const int blocks[4], gboolean bottleneck)
{
  return build_resnet_v(name, blocks, bottleneck, FALSE);
}

static wl_model *build_resnet18(void)
{
  static const int b[4] = {2, 2, 2, 2};
  return build_resnet("resnet18", b, FALSE);
}
static wl_model *build_resnet34(void)
{
  static const int b[4] = {3, 4, 6, 3};
  return build_resnet("resnet34", b, FALSE);
}
static wl_model *build_resnet50(void)
{
  static const int b[4] = {3, 4, 6, 3};
  return build_resnet("resnet50", b, TRUE);
}
static wl_model *build_resnet101(void)
{
  static const int b[4] = {3, 4, 23, 3};
  return build_resnet("resnet101", b, TRUE);
}
static wl_model *build_resnet152(void)
{
  static const int b[4] = {3, 8, 36, 3};
  return build_resnet("resnet152", b, TRUE);
}
static wl_model *build_resnet50_v1(void)
{
  static const int b[4] = {3, 4, 6, 3};
  return build_resnet_v("resnet50-v1", b, TRUE, TRUE);
}
static wl_model *build_resnet101_v1(void)
{
  static const int b[4] = {3, 4, 23, 3};
  return build_resnet_v("resnet101-v1", b, TRUE, TRUE);
}
static wl_model *build_resnet152_v1(void)
{
  static const int b[4] = {3, 8, 36, 3};
  return build_resnet_v("resnet152-v1", b, TRUE, TRUE);
}

/* ---- CHAOS MNIST networks ------------------------------------------------------------------ */

/* The three MNIST CNNs of Viebke, Memeti, Pllana and Abraham, "CHAOS: a parallelization scheme
 * for training convolutional neural networks on Intel Xeon Phi" (J. Supercomputing 2017), also
 * used in Viebke et al., "Performance modelling of deep learning on Intel many integrated core
 * architectures" (HPCS 2019). The papers give a layer table (29x29 input, maps, map sizes,
 * kernel sizes, neurons of the fully connected layer, 10 outputs); the numbers here are as
 * recalled from it, not checked against it (docs/workloads.md lists what is uncertain).
 * Chosen here: full connection between maps, a bias per map, tanh activations (the
 * implementation derives from Ciresan et al.'s MNIST code, which uses scaled tanh) and
 * non-overlapping max pooling. */
static wl_model *build_chaos(const char *name, const uint32_t *maps, const uint32_t *kernels,
                             const uint32_t *pools, int n_conv, uint32_t fc_neurons)
{
  wl_model *m = wl_model_new(name, 1, 29, 29);
  int x = -1;
  char b[64];
  for (int i = 0; i < n_conv; i++) {
    g_snprintf(b, sizeof(b), "conv%d", i + 1);
    x = conv_full(m, b, x, maps[i], kernels[i], kernels[i], 1, 1, 0, 0, TRUE);
    g_snprintf(b, sizeof(b), "conv%d/tanh", i + 1);
    x = simple(m, b, WL_LAYER_TANH, x);
    g_snprintf(b, sizeof(b), "pool%d", i + 1);
    x = pool(m, b, WL_LAYER_MAXPOOL, x, pools[i], pools[i], 0, FALSE);
  }
  x = simple(m, "flatten", WL_LAYER_FLATTEN, x);
  x = fc(m, "fc1", x, fc_neurons);
  x = simple(m, "fc1/tanh", WL_LAYER_TANH, x);
  x = fc(m, "fc2", x, 10);
  return classifier_end(m, x);
}

/* Small: 5 maps 26x26 (4x4), pool to 13x13, 10 maps 9x9 (5x5), pool to 3x3, 50 neurons. */
static wl_model *build_chaos_small(void)
{
  static const uint32_t maps[] = {5, 10}, k[] = {4, 5}, p[] = {2, 3};
  return build_chaos("chaos-small", maps, k, p, 2, 50);
}

/* Medium: 20 maps 26x26 (4x4), pool to 13x13, 40 maps 9x9 (5x5), pool to 3x3, 150 neurons. */
static wl_model *build_chaos_medium(void)
{
  static const uint32_t maps[] = {20, 40}, k[] = {4, 5}, p[] = {2, 3};
  return build_chaos("chaos-medium", maps, k, p, 2, 150);
}

/* Large: 20 maps 26x26 (4x4), pool 13x13, 60 maps 12x12 (2x2), pool 6x6, 100 maps 4x4 (3x3),
 * pool 2x2, 150 neurons. */
static wl_model *build_chaos_large(void)
{
  static const uint32_t maps[] = {20, 60, 100}, k[] = {4, 2, 3}, p[] = {2, 2, 2};
  return build_chaos("chaos-large", maps, k, p, 3, 150);
}

/* ---- Registry ------------------------------------------------------------------------------ */

static const wl_zoo_entry zoo[] = {
    {"lenet5", "LeNet-5, 32x32 MNIST-style input, 61.7 K parameters", build_lenet5},
    {"alexnet", "AlexNet as torchvision builds it, 224x224, 61.1 M parameters", build_alexnet},
    {"alexnet_owt", "one-tower AlexNet (one weird trick; TF benchmarks), 50.3 M parameters",
     build_alexnet_owt},
    {"vgg11", "VGG-11 (configuration A), 132.9 M parameters", build_vgg11},
    {"vgg16", "VGG-16 (configuration D), 138.4 M parameters", build_vgg16},
    {"vgg19", "VGG-19 (configuration E), 143.7 M parameters", build_vgg19},
    {"nin", "Network in Network, ImageNet model, 7.6 M parameters", build_nin},
    {"overfeat", "OverFeat fast model, 231x231, 145.9 M parameters", build_overfeat},
    {"googlenet", "GoogLeNet as torchvision builds it (no auxiliary heads), 6.6 M parameters",
     build_googlenet},
    {"inception_v3", "Inception v3 as torchvision builds it, 299x299, 23.8 M parameters",
     build_inception_v3},
    {"resnet18", "ResNet-18, 11.7 M parameters", build_resnet18},
    {"resnet34", "ResNet-34, 21.8 M parameters", build_resnet34},
    {"resnet50", "ResNet-50 (v1.5), 25.6 M parameters", build_resnet50},
    {"resnet101", "ResNet-101 (v1.5), 44.5 M parameters", build_resnet101},
    {"resnet152", "ResNet-152 (v1.5), 60.2 M parameters", build_resnet152},
    {"resnet50-v1", "ResNet-50 v1 (stride on the first 1x1; Caffe, TF 2017), 25.6 M parameters",
     build_resnet50_v1},
    {"resnet101-v1", "ResNet-101 v1 (stride on the first 1x1), 44.5 M parameters",
     build_resnet101_v1},
    {"resnet152-v1", "ResNet-152 v1 (stride on the first 1x1), 60.2 M parameters",
     build_resnet152_v1},
    {"chaos-small", "CHAOS small MNIST CNN (Viebke, Pllana et al.), 29x29", build_chaos_small},
    {"chaos-medium", "CHAOS medium MNIST CNN (Viebke, Pllana et al.), 29x29", build_chaos_medium},
    {"chaos-large", "CHAOS large MNIST CNN (Viebke, Pllana et al.), 29x29", build_chaos_large},
};

const wl_zoo_entry *wl_zoo(size_t *n)
{
  *n = G_N_ELEMENTS(zoo);
  return zoo;
}

wl_model *wl_zoo_build(const char *name, GError **error)
{
  for (gsize i = 0; i < G_N_ELEMENTS(zoo); i++)
    if (strcmp(zoo[i].name, name) == 0)
      return zoo[i].build();
  g_autoptr(GString) names = g_string_new(NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(zoo); i++)
    g_string_append_printf(names, "%s%s", i ? ", " : "", zoo[i].name);
  /* The transformers are models of the same commands: name them too. */
  size_t n_tf;
  const wl_tf_zoo_entry *tf = wl_tf_zoo(&n_tf);
  for (size_t i = 0; i < n_tf; i++)
    g_string_append_printf(names, ", %s", tf[i].name);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "unknown model '%s' (not a file; zoo models: %s; or transformer:SPEC)", name,
              names->str);
  return NULL;
}
