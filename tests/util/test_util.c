/* Leaf utilities: size and list parsing, INI errors with line numbers, atomic output files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glib/gstdio.h>
#include <string.h>

#include "util.h"

static uint64_t size_ok(const char *text)
{
  uint64_t v = 0;
  g_autoptr(GError) e = NULL;
  assert_true(dt_parse_size(text, "--bytes", &v, &e));
  return v;
}

static void size_bad(const char *text, const char *needle)
{
  uint64_t v = 0;
  g_autoptr(GError) e = NULL;
  assert_false(dt_parse_size(text, "--bytes", &v, &e));
  assert_int_equal(e->code, DT_ERROR_INPUT);
  assert_non_null(strstr(e->message, "--bytes"));
  assert_non_null(strstr(e->message, needle));
}

static void test_sizes(void **state)
{
  assert_int_equal(size_ok("0"), 0);
  assert_int_equal(size_ok("4096"), 4096);
  assert_int_equal(size_ok("1K"), 1024);
  assert_int_equal(size_ok("1KB"), 1000);
  assert_int_equal(size_ok("64M"), 64ULL << 20);
  assert_int_equal(size_ok("1.5K"), 1536);
  assert_int_equal(size_ok("2GB"), 2000000000ULL);
  assert_int_equal(size_ok("1GiB"), 1ULL << 30);
  assert_int_equal(size_ok("15E"), 15ULL << 60);
  assert_int_equal(size_ok("18446744073709551615"), UINT64_MAX);
  size_bad("-1K", "not a size");
  size_bad("16E", "larger than 16 EiB");
  size_bad("18446744073709551616", "larger than 16 EiB");
  size_bad("1.1", "whole number");
  size_bad("12Q", "unknown size suffix");
  size_bad("1Kb", "unknown size suffix"); /* b would be bits */
  size_bad("", "empty");
}

static void test_lists(void **state)
{
  g_autoptr(GError) e = NULL;
  g_autoptr(GArray) a = dt_parse_int_list("1,2,4", "--devices", 1, 100, &e);
  assert_int_equal(a->len, 3);
  g_autoptr(GArray) b = dt_parse_int_list("1..64", "--devices", 1, 1000, &e);
  assert_int_equal(b->len, 7); /* 1 2 4 8 16 32 64 */
  assert_int_equal(g_array_index(b, int64_t, 6), 64);
  g_autoptr(GArray) c = dt_parse_int_list("3-5", "--devices", 1, 1000, &e);
  assert_int_equal(c->len, 3);
  assert_null(dt_parse_int_list("1,,2", "--devices", 1, 100, &e));
  g_clear_error(&e);
  assert_null(dt_parse_int_list("0,1", "--devices", 1, 100, &e));
  assert_non_null(strstr(e->message, "out of range"));
  g_clear_error(&e);
  int64_t v;
  assert_false(dt_parse_int64("12x", "--nodes", 1, 10, &v, &e));
  g_clear_error(&e);
  double d;
  assert_false(dt_parse_double("nan", "--x", 0, 1, &d, &e));
  g_clear_error(&e);
  assert_false(dt_parse_double("inf", "--x", 0, 1e300, &d, &e));
}

static void test_ini(void **state)
{
  const char *text = "# a device\n"
                     "[device]\n"
                     "name = v100\n"
                     "\n"
                     "peak_tflops_fp32 = -15.7\n"
                     "memory = 16G\n"
                     "bandwith_gbps = 3\n";
  g_autoptr(GError) e = NULL;
  g_autoptr(dt_ini) ini = dt_ini_load_data("v100.ini", text, strlen(text), &e);
  assert_non_null(ini);
  assert_int_equal(dt_ini_line(ini, "device", "peak_tflops_fp32"), 5);
  double peak = 0;
  assert_false(dt_ini_double(ini, "device", "peak_tflops_fp32", TRUE, 0, 1e6, &peak, &e));
  assert_string_equal(e->message,
                      "v100.ini:5: [device] peak_tflops_fp32: -15.7 is out of range (0 to 1e+06)");
  g_clear_error(&e);
  uint64_t mem = 0;
  assert_true(dt_ini_size(ini, "device", "memory", TRUE, &mem, &e));
  assert_int_equal(mem, 16ULL << 30);
  assert_false(dt_ini_double(ini, "device", "missing", TRUE, 0, 1, &peak, &e));
  assert_non_null(strstr(e->message, "v100.ini:2: [device] missing: missing required key"));
  g_clear_error(&e);
  const char *known[] = {"name", "peak_tflops_fp32", "memory", "bandwidth_gbps", NULL};
  assert_false(dt_ini_check_keys(ini, "device", known, &e));
  assert_non_null(strstr(e->message, "v100.ini:7: [device] bandwith_gbps: unknown key"));
  g_clear_error(&e);
  /* Syntax errors name the file and GKeyFile's line. */
  assert_null(dt_ini_load_data("bad.ini", "[device\nx=1\n", 12, &e));
  assert_non_null(strstr(e->message, "bad.ini"));
}

static void test_outfile(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-out-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.csv", NULL);
  g_autoptr(GError) e = NULL;
  dt_outfile *o = dt_outfile_open(path, &e);
  fputs("partial", dt_outfile_stream(o));
  dt_outfile_free(o);   /* abandoned: nothing may be left behind */
  assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_null(g_dir_read_name(d));
  g_dir_close(d);
  o = dt_outfile_open(path, &e);
  fputs("a,b\n", dt_outfile_stream(o));
  assert_true(dt_outfile_commit(o, &e));
  dt_outfile_free(o);
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(path, &text, NULL, NULL));
  assert_string_equal(text, "a,b\n");
  g_unlink(path);
  g_rmdir(dir);
}

static void test_exit_status(void **state)
{
  g_autoptr(GError) input = g_error_new(DT_ERROR, DT_ERROR_INPUT, "x");
  g_autoptr(GError) internal = g_error_new(DT_ERROR, DT_ERROR_INTERNAL, "x");
  g_autoptr(GError) option = g_error_new(G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "x");
  g_autoptr(GError) other = g_error_new(G_FILE_ERROR, G_FILE_ERROR_IO, "x");
  assert_int_equal(dt_error_exit_status(input), 2);
  assert_int_equal(dt_error_exit_status(option), 2);
  assert_int_equal(dt_error_exit_status(internal), 1);
  assert_int_equal(dt_error_exit_status(other), 1);
  assert_int_equal(dt_error_exit_status(NULL), 1);
}

/* JSON members and elements: commas between, none after an opening brace, bracket or key;
 * CSV fields quoted (quotes doubled) only when they hold a comma, quote or line break. */
static void test_json_csv_writers(void **state)
{
  g_autoptr(GString) o = g_string_new("{");
  dt_json_key(o, "a");
  dt_json_int(o, -3);
  dt_json_key(o, "b\"");
  g_string_append_c(o, '[');
  dt_json_next(o);
  dt_json_int(o, INT64_MAX);
  dt_json_next(o);
  dt_json_string(o, "x");
  g_string_append(o, "]}");
  assert_string_equal(o->str, "{\"a\":-3,\"b\\\"\":[9223372036854775807,\"x\"]}");
  static const char *const in[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "", NULL};
  static const char *const out[] = {"plain", "\"a,b\"", "\"say \"\"hi\"\"\"", "\"two\nlines\"",
                                    "", ""};
  for (int i = 0; i < 6; i++) {
    g_autoptr(GString) f = g_string_new(NULL);
    dt_csv_field(f, in[i]);
    assert_string_equal(f->str, out[i]);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes), cmocka_unit_test(test_lists), cmocka_unit_test(test_ini),
      cmocka_unit_test(test_outfile), cmocka_unit_test(test_exit_status),
      cmocka_unit_test(test_json_csv_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
