/* Every entry of every catalog loads the way the command line loads it: the names that the
 * `dtsim list` commands print (dt_catalog_names) are exactly the INI files on disk, and each
 * one loads. A system's device is loaded through the device catalog, as `--system` does (a
 * system naming a device the catalog lacks, as dgx2 once did, fails here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "comm_net.h"
#include "devices.h"
#include "util.h"
#include "wl_transformer.h"
#include "workloads.h"

/* The *.ini files of DATA_DIR/subdir, counted from the directory itself. */
static guint count_ini(const char *subdir)
{
  const char *root = g_getenv("DTSIM_DATA_DIR");
  assert_non_null(root);
  g_autofree char *dir = g_build_filename(root, subdir, NULL);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  assert_non_null(d);
  guint n = 0;
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL)
    n += g_str_has_suffix(name, ".ini");
  return n;
}

static void test_devices_load(void **state)
{
  g_auto(GStrv) names = dt_catalog_names("devices/catalog");
  assert_int_equal(g_strv_length(names), count_ini("devices/catalog"));
  /* 26 files at the time of writing: none may go missing unnoticed. */
  assert_true(g_strv_length(names) >= 26);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) e = NULL;
    g_autoptr(dev_device) d = dev_device_load(*n, NULL, &e);
    if (d == NULL)
      fail_msg("device %s: %s", *n, e->message);
    assert_string_equal(dev_device_name(d), *n);
    assert_true(dev_peak_flops(d, WL_PREC_FP32) > 0);
    assert_true(dev_memory_Bps(d) > 0);
  }
}

static void test_systems_load(void **state)
{
  g_auto(GStrv) names = dt_catalog_names("comm/catalog/systems");
  assert_int_equal(g_strv_length(names), count_ini("comm/catalog/systems"));
  assert_true(g_strv_length(names) >= 23);
  gboolean saw_dgx2 = FALSE;
  for (char **n = names; *n; n++) {
    g_autoptr(GError) e = NULL;
    g_autoptr(comm_system) s = comm_system_load(*n, "--system", &e);
    if (s == NULL)
      fail_msg("system %s: %s", *n, e->message);
    assert_non_null(s->device);
    assert_true(s->devices_per_node >= 1);
    g_autoptr(dev_device) d = dev_device_load(s->device, NULL, &e);
    if (d == NULL)
      fail_msg("system %s: device %s: %s", *n, s->device, e->message);
    saw_dgx2 |= strcmp(*n, "dgx2") == 0;
  }
  assert_true(saw_dgx2);
}

/* Fabrics on their own (tests/coll/test_nccl.c's test_catalog_loads also plans NCCL on each
 * system). */
static void test_fabrics_load(void **state)
{
  g_auto(GStrv) names = dt_catalog_names("comm/catalog/fabrics");
  assert_int_equal(g_strv_length(names), count_ini("comm/catalog/fabrics"));
  assert_true(g_strv_length(names) >= 18);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) e = NULL;
    g_autoptr(comm_fabric) f = comm_fabric_load(*n, "--inter", &e);
    if (f == NULL)
      fail_msg("fabric %s: %s", *n, e->message);
  }
}

/* Every zoo model builds by name (an unknown name is refused), every transformer parses. */
static void test_zoo_builds(void **state)
{
  size_t n = 0;
  const wl_zoo_entry *zoo = wl_zoo(&n);
  assert_true(n >= 18);
  for (size_t i = 0; i < n; i++) {
    g_autoptr(GError) e = NULL;
    g_autoptr(wl_model) m = wl_zoo_build(zoo[i].name, &e);
    if (m == NULL)
      fail_msg("model %s: %s", zoo[i].name, e->message);
    assert_string_equal(wl_model_name(m), zoo[i].name);
    assert_true(wl_model_n_layers(m) > 0);
  }
  g_autoptr(GError) e = NULL;
  assert_null(wl_zoo_build("no-such-model", &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  /* The transformer zoo: every entry parses by name. */
  const wl_tf_zoo_entry *tz = wl_tf_zoo(&n);
  assert_true(n >= 8);
  for (size_t i = 0; i < n; i++) {
    wl_tf tf;
    g_autoptr(GError) te = NULL;
    if (!wl_tf_parse(tz[i].name, &tf, &te))
      fail_msg("model %s: %s", tz[i].name, te->message);
    assert_true(wl_tf_params(&tf) > 0);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_devices_load), cmocka_unit_test(test_systems_load),
      cmocka_unit_test(test_fabrics_load), cmocka_unit_test(test_zoo_builds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
