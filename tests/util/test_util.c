/* Leaf utilities: size and list parsing, INI errors with line numbers, output files by kind of
 * target and their removal on signals, bounded input files, one-line messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

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
  /* A dash range holds at most 1 000 001 points (its ends 1e6 apart), wherever it lies in the
   * int64 range; the options fuzz harness feeds only short ranges, so the bound is tested
   * here. */
  g_autoptr(GArray) most = dt_parse_int_list("0-1000000", "--devices", INT64_MIN, INT64_MAX, &e);
  assert_non_null(most);
  assert_int_equal(most->len, 1000001);
  assert_int_equal(g_array_index(most, int64_t, 1000000), 1000000);
  assert_null(dt_parse_int_list("0-1000001", "--devices", INT64_MIN, INT64_MAX, &e));
  assert_non_null(strstr(e->message, "too many points"));
  g_clear_error(&e);
  assert_null(dt_parse_int_list("-9223372036854775808-9223372036854775807", "--devices",
                                INT64_MIN, INT64_MAX, &e));
  assert_non_null(strstr(e->message, "too many points"));
  g_clear_error(&e);
  /* The whole list is bounded too, items counted before the text is split (a 60 MB list of
   * 30 million items took 1.5 GB): 1 000 002 items, then ranges adding up past the bound
   * (1 000 000 points and then 2 more), then doubling ranges of 20 points each (2^0..2^19)
   * 50 001 times, 1 000 020 points. */
  GString *many = g_string_new("1");
  for (int i = 0; i < 1000001; i++)
    g_string_append(many, ",1");
  assert_null(dt_parse_int_list(many->str, "split", 1, 10, &e));
  assert_non_null(strstr(e->message, "a list of 1000002 items, more than the 1000001"));
  g_clear_error(&e);
  assert_null(dt_parse_int_list("1-1000000,5-6", "--devices", 1, INT64_MAX, &e));
  assert_non_null(strstr(e->message, "too many points"));
  g_clear_error(&e);
  g_string_assign(many, "1..524288");
  for (int i = 0; i < 50000; i++)
    g_string_append(many, ",1..524288");
  assert_null(dt_parse_int_list(many->str, "--batches", 1, INT64_MAX, &e));
  assert_non_null(strstr(e->message, "more than the 1000001 points"));
  g_clear_error(&e);
  g_string_free(many, TRUE);
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


/* Files in `dir`, as a count. */
static int entries(const char *dir)
{
  int n = 0;
  GDir *d = g_dir_open(dir, 0, NULL);
  while (d && g_dir_read_name(d))
    n++;
  if (d)
    g_dir_close(d);
  return n;
}

static char *slurp(const char *path)
{
  char *text = NULL;
  assert_true(g_file_get_contents(path, &text, NULL, NULL));
  return text;
}

static gboolean write_out(const char *path, const char *text, GError **e)
{
  dt_outfile *o = dt_outfile_open(path, e);
  if (!o)
    return FALSE;
  fputs(text, dt_outfile_stream(o));
  gboolean ok = dt_outfile_commit(o, e);
  dt_outfile_free(o);
  return ok;
}

/* What each kind of target becomes (util.h): regular files replaced keeping their mode, links
 * followed, FIFOs written in place, folders and sockets refused. */
static void test_outfile_targets(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-targets-XXXXXX", NULL);
  g_autofree char *reg = g_build_filename(dir, "reg.csv", NULL);
  g_autofree char *link = g_build_filename(dir, "link.csv", NULL);
  g_autofree char *dangling = g_build_filename(dir, "dangling.csv", NULL);
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *sock = g_build_filename(dir, "sock", NULL);
  g_autofree char *sub = g_build_filename(dir, "sub", NULL);

  /* A regular file: replaced, its permission bits (0640, not the umask's) kept. */
  assert_true(g_file_set_contents(reg, "old\n", -1, NULL));
  assert_int_equal(chmod(reg, 0640), 0);
  g_autoptr(GError) e = NULL;
  assert_true(write_out(reg, "new\n", &e));
  g_autofree char *t1 = slurp(reg);
  assert_string_equal(t1, "new\n");
  struct stat st;
  assert_int_equal(stat(reg, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0640);

  /* A symbolic link: its target is written, the link stays a link. */
  assert_int_equal(symlink("reg.csv", link), 0);
  assert_true(write_out(link, "via link\n", &e));
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  g_autofree char *t2 = slurp(reg);
  assert_string_equal(t2, "via link\n");
  /* A link to a missing file is refused, and nothing is created. */
  assert_int_equal(symlink("missing/x.csv", dangling), 0);
  assert_false(write_out(dangling, "x", &e));
  assert_int_equal(e->code, DT_ERROR_INPUT);
  g_clear_error(&e);
  assert_false(dt_outfile_check(dangling, "--csv", &e));
  assert_non_null(strstr(e->message, "--csv"));
  g_clear_error(&e);

  /* A FIFO that nobody reads: refused at once (no wait), and still a FIFO. */
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_true(dt_outfile_check(fifo, "--trace", &e));
  assert_false(write_out(fifo, "x", &e));
  assert_int_equal(e->code, DT_ERROR_INPUT);
  assert_non_null(strstr(e->message, "no process reads"));
  g_clear_error(&e);
  /* With a reader: written in place. */
  int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
  assert_true(rfd >= 0);
  assert_true(write_out(fifo, "through the fifo\n", &e));
  char buf[64] = {0};
  assert_int_equal(read(rfd, buf, sizeof buf - 1), (int)strlen("through the fifo\n"));
  assert_string_equal(buf, "through the fifo\n");
  close(rfd);
  assert_int_equal(lstat(fifo, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));

  /* A socket and a folder are refused, by the check and by the open. */
  int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  g_strlcpy(addr.sun_path, sock, sizeof addr.sun_path);
  assert_int_equal(bind(sfd, (struct sockaddr *)&addr, sizeof addr), 0);
  assert_false(dt_outfile_check(sock, "--csv", &e));
  assert_non_null(strstr(e->message, "a socket"));
  g_clear_error(&e);
  assert_false(write_out(sock, "x", &e));
  g_clear_error(&e);
  close(sfd);
  assert_int_equal(g_mkdir(sub, 0700), 0);
  assert_false(dt_outfile_check(sub, "--plot", &e));
  assert_non_null(strstr(e->message, "a folder"));
  g_clear_error(&e);
  /* A file in a folder that does not exist. */
  g_autofree char *nowhere = g_build_filename(dir, "no", "such", "t.json", NULL);
  assert_false(dt_outfile_check(nowhere, "--trace", &e));
  assert_int_equal(e->code, DT_ERROR_INPUT);
  assert_non_null(strstr(e->message, "--trace"));
  g_clear_error(&e);

  /* No temporary file was left by any of it: reg, link, dangling, fifo, sock, sub. */
  assert_int_equal(entries(dir), 6);
  g_rmdir(sub);
  g_unlink(sock);
  g_unlink(fifo);
  g_unlink(dangling);
  g_unlink(link);
  g_unlink(reg);
  g_rmdir(dir);
}

/* A process killed by SIGINT, SIGTERM or SIGHUP while an output is open leaves no temporary
 * file. */
static void test_outfile_signals(void **state)
{
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (gsize i = 0; i < G_N_ELEMENTS(sigs); i++) {
    g_autofree char *dir = g_dir_make_tmp("dtsim-sig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "out.json", NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      /* The handlers were installed at the first output opened (before the fork, or here). */
      dt_outfile *o = dt_outfile_open(path, NULL);
      if (!o || entries(dir) != 1)
        _exit(3);   /* the temporary file must exist before the signal */
      fputs("partial", dt_outfile_stream(o));
      raise(sigs[i]);
      _exit(4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sigs[i]);
    assert_int_equal(entries(dir), 0);
    g_rmdir(dir);
  }
}

/* Forks a child that makes a scratch folder holding two files, sends its path up a pipe and
 * then raises `sig` (0: waits to be killed). Returns the child's pid; *path is the folder. */
static pid_t scratch_child(int sig, char **path)
{
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    char *dir = dt_scratch_new("dtsim-test-scratch", NULL);
    if (dir == NULL)
      _exit(3);
    g_autofree char *a = g_build_filename(dir, "system.ini", NULL);
    g_autofree char *b = g_build_filename(dir, "plan.json", NULL);
    if (!g_file_set_contents(a, "x", -1, NULL) || !g_file_set_contents(b, "y", -1, NULL))
      _exit(4);
    if (write(fds[1], dir, strlen(dir)) != (ssize_t)strlen(dir))
      _exit(5);
    close(fds[1]);
    if (sig)
      raise(sig);
    for (;;)
      pause();
  }
  close(fds[1]);
  char buf[4096];
  gsize len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (gsize)n;
  close(fds[0]);
  buf[len] = '\0';
  *path = g_strdup(buf);
  return pid;
}

/* A scratch folder is named after the process and goes away with its files on
 * dt_scratch_remove() and when the process dies of SIGINT, SIGTERM or SIGHUP (how Open MPI
 * ends the other ranks when one aborts). One left by SIGKILL is removed by the next sweep,
 * which keeps the folders of live processes and of other machines. */
static void test_scratch(void **state)
{
  g_autofree char *dir = dt_scratch_new("dtsim-test-scratch", NULL);
  assert_non_null(dir);
  g_autofree char *pid_part = g_strdup_printf("-%d-", (int)getpid());
  assert_non_null(strstr(dir, pid_part));
  g_autofree char *file = g_build_filename(dir, "a", NULL);
  assert_true(g_file_set_contents(file, "a", -1, NULL));
  dt_scratch_remove(dir);
  assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));

  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (gsize i = 0; i < G_N_ELEMENTS(sigs); i++) {
    g_autofree char *path = NULL;
    pid_t pid = scratch_child(sigs[i], &path);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sigs[i]);
    g_autofree char *child_part = g_strdup_printf("-%d-", (int)pid);
    assert_non_null(strstr(path, child_part));
    if (g_file_test(path, G_FILE_TEST_EXISTS))
      fail_msg("signal %d left %s", sigs[i], path);
  }

  /* SIGKILL leaves the folder; the sweep removes it, not this process's own folder nor one of
   * the same pid on another machine. */
  g_autofree char *killed = NULL;
  pid_t pid = scratch_child(0, &killed);
  assert_int_equal(kill(pid, SIGKILL), 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(g_file_test(killed, G_FILE_TEST_IS_DIR));
  g_autofree char *mine = dt_scratch_new("dtsim-test-scratch", NULL);
  g_autofree char *other_tmpl = g_strdup_printf("%s/dtsim-test-scratch-other.host-%d-XXXXXX",
                                                g_get_tmp_dir(), (int)pid);
  char *other = g_mkdtemp(other_tmpl);
  assert_non_null(other);
  dt_scratch_sweep("dtsim-test-scratch");
  assert_false(g_file_test(killed, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(mine, G_FILE_TEST_IS_DIR));
  assert_true(g_file_test(other, G_FILE_TEST_IS_DIR));
  dt_scratch_remove(mine);
  g_rmdir(other);
}

/* Inputs: the size limit before reading a regular file, a bound on endless ones, and a FIFO
 * without a writer read as nothing instead of waited on. */
static void test_read_file(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-in-XXXXXX", NULL);
  g_autofree char *small = g_build_filename(dir, "small.ini", NULL);
  g_autofree char *big = g_build_filename(dir, "big.json", NULL);
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  char *data = NULL;
  gsize len = 0;
  g_autoptr(GError) e = NULL;
  assert_true(g_file_set_contents(small, "0123456789", -1, NULL));
  assert_true(dt_read_file(small, "--x", 10, &data, &len, &e));
  assert_int_equal(len, 10);
  assert_string_equal(data, "0123456789");
  g_free(data);
  assert_false(dt_read_file(small, "--x", 9, &data, &len, &e));
  assert_null(data);
  assert_non_null(strstr(e->message, "10 bytes is more than the 9 bytes"));
  g_clear_error(&e);
  /* A sparse regular file of 64 MiB + 1 byte: refused by its size, nothing read. */
  int fd = open(big, O_WRONLY | O_CREAT, 0600);
  assert_int_equal(ftruncate(fd, (off_t)DT_INPUT_MAX_BYTES + 1), 0);
  close(fd);
  assert_false(dt_read_file(big, "--model", DT_INPUT_MAX_BYTES, &data, &len, &e));
  assert_int_equal(e->code, DT_ERROR_INPUT);
  assert_non_null(strstr(e->message, "--model"));
  g_clear_error(&e);
  /* /dev/zero never ends: read up to the bound (1 MiB here), then refused. Only read. */
  assert_false(dt_read_file("/dev/zero", "--calibration", 1 << 20, &data, &len, &e));
  assert_non_null(strstr(e->message, "more than the 1 MiB"));
  g_clear_error(&e);
  /* A FIFO nobody writes: an immediate refusal, not a hang. */
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_false(dt_read_file(fifo, "--model", 1 << 20, &data, &len, &e));
  assert_non_null(strstr(e->message, "FIFO"));
  g_clear_error(&e);
  /* A folder and a missing file. */
  assert_false(dt_read_file(dir, "--model", 1 << 20, &data, &len, &e));
  assert_non_null(strstr(e->message, "a folder"));
  g_clear_error(&e);
  g_autofree char *none = g_build_filename(dir, "none", NULL);
  assert_false(dt_read_file(none, "--model", 1 << 20, &data, &len, &e));
  assert_non_null(strstr(e->message, "no such file"));
  g_unlink(fifo);
  g_unlink(big);
  g_unlink(small);
  g_rmdir(dir);
}

static void escaped_is(const char *in, const char *want)
{
  g_autofree char *got = dt_escape(in);
  assert_string_equal(got, want);
}

static void test_escape(void **state)
{
  escaped_is("plain/net.json", "plain/net.json");
  escaped_is("a\nb\tc\rd", "a\\nb\\tc\\rd");
  escaped_is("\x1b[31mred", "\\x1b[31mred");
  escaped_is("jos\xc3\xa9.json", "jos\xc3\xa9.json");          /* UTF-8 kept */
  escaped_is("lat\xe9.json", "lat\\xe9.json");                  /* Latin-1 byte */
  escaped_is("\xc2\x85next\xe2\x80\xa8line", "\\u0085next\\u2028line");
  escaped_is("cut\xe2\x80", "cut\\xe2\\x80");                   /* truncated sequence */
  /* JSON output stays UTF-8: a Latin-1 byte becomes U+FFFD, UTF-8 is copied. */
  g_autoptr(GString) j = g_string_new(NULL);
  dt_json_string(j, "lat\xe9/jos\xc3\xa9\n");
  assert_string_equal(j->str, "\"lat\\ufffd/jos\xc3\xa9\\n\"");
}

/* Option values are bytes: a Latin-1 file name and a UTF-8 one pass GOption in the C locale. */
static void test_option_bytes(void **state)
{
  char *model = NULL;
  GOptionEntry entries[] = {
      {"model", 0, 0, G_OPTION_ARG_STRING, &model, "model", "FILE"},
      {NULL},
  };
  dt_option_entries_as_bytes(entries);
  assert_int_equal(entries[0].arg, G_OPTION_ARG_FILENAME);
  const char *names[] = {"--model=/tmp/lat\xe9.json", "--model=/tmp/jos\xc3\xa9.json"};
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_add_main_entries(ctx, entries, NULL);
    char *argv_[] = {"dtsim", (char *)names[i], NULL};
    char **argv = argv_;
    int argc = 2;
    g_autoptr(GError) e = NULL;
    assert_true(g_option_context_parse(ctx, &argc, &argv, &e));
    assert_string_equal(model, names[i] + strlen("--model="));
    g_clear_pointer(&model, g_free);
  }
}

static void test_size_list(void **state)
{
  g_autoptr(GError) e = NULL;
  g_autoptr(GArray) a = dt_parse_size_list("1K..8K, 3", "--sizes", &e);
  assert_non_null(a);
  assert_int_equal(a->len, 5);
  assert_int_equal(g_array_index(a, uint64_t, 0), 1024);
  assert_int_equal(g_array_index(a, uint64_t, 3), 8192);
  assert_int_equal(g_array_index(a, uint64_t, 4), 3);
  /* 16E is over UINT64_MAX; a doubling range to 8 EiB is 2^0 .. 2^63, 64 sizes, no overflow. */
  assert_null(dt_parse_size_list("1..16E", "--bytes", &e));
  assert_non_null(strstr(e->message, "--bytes"));
  g_clear_error(&e);
  g_autoptr(GArray) x = dt_parse_size_list("1..8E", "--bytes", &e);
  assert_non_null(x);
  assert_int_equal(x->len, 64);
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

/* dt_csv_split reads back the RFC 4180 quoting: a quoted comma stays in its field, a doubled
 * quote is one quote, empty fields count, a carriage return ends the line; and a line written
 * by dt_csv_field splits into the fields written. */
static void test_csv_split(void **state)
{
  (void)state;
  g_autoptr(GPtrArray) f = dt_csv_split("a,\"b, c\",,\"say \"\"hi\"\"\",x\r");
  assert_int_equal(f->len, 5);
  static const char *const want[] = {"a", "b, c", "", "say \"hi\"", "x"};
  for (guint i = 0; i < 5; i++)
    assert_string_equal(g_ptr_array_index(f, i), want[i]);
  g_autoptr(GPtrArray) one = dt_csv_split("");
  assert_int_equal(one->len, 1);
  assert_string_equal(g_ptr_array_index(one, 0), "");
  static const char *const in[] = {"plain", "a,b", "q\"q", ""};
  g_autoptr(GString) line = g_string_new(NULL);
  for (int i = 0; i < 4; i++) {
    if (i)
      g_string_append_c(line, ',');
    dt_csv_field(line, in[i]);
  }
  g_autoptr(GPtrArray) back = dt_csv_split(line->str);
  assert_int_equal(back->len, 4);
  for (guint i = 0; i < 4; i++)
    assert_string_equal(g_ptr_array_index(back, i), in[i]);
}

/* Outputs held together (dt_outfile_hold): nothing is renamed before the release; a release
 * that keeps renames both, one that does not leaves the old files. */
static void test_outfile_hold(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-hold-XXXXXX", NULL);
  g_autofree char *a = g_build_filename(dir, "a.csv", NULL);
  g_autofree char *b = g_build_filename(dir, "b.json", NULL);
  g_autoptr(GError) e = NULL;
  assert_true(g_file_set_contents(a, "old a", -1, NULL));
  for (int keep = 0; keep <= 1; keep++) {
    dt_outfile_hold();
    const char *paths[] = {a, b};
    for (int i = 0; i < 2; i++) {
      dt_outfile *o = dt_outfile_open(paths[i], &e);
      fputs("new", dt_outfile_stream(o));
      assert_true(dt_outfile_commit(o, &e));
      dt_outfile_free(o);
    }
    g_autofree char *text = NULL;
    assert_true(g_file_get_contents(a, &text, NULL, NULL));
    assert_string_equal(text, "old a");   /* committed, not renamed yet */
    assert_false(g_file_test(b, G_FILE_TEST_EXISTS));
    assert_true(dt_outfile_release(keep, &e));
    g_free(text);
    assert_true(g_file_get_contents(a, &text, NULL, NULL));
    assert_string_equal(text, keep ? "new" : "old a");
    assert_int_equal(g_file_test(b, G_FILE_TEST_EXISTS), keep);
    /* No temporary name is left either way: a.csv, and b.json once kept. */
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;
    while (g_dir_read_name(d))
      n++;
    g_dir_close(d);
    assert_int_equal(n, 1 + keep);
  }
  g_unlink(a);
  g_unlink(b);
  g_rmdir(dir);
}

/* Same file by inode (a link), same path not yet written, devices that may repeat. */
static void test_files_distinct(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-same-XXXXXX", NULL);
  g_autofree char *in = g_build_filename(dir, "in.ini", NULL);
  g_autofree char *link = g_build_filename(dir, "link.ini", NULL);
  g_autofree char *dotted = g_build_filename(dir, ".", "in.ini", NULL);
  g_autofree char *fresh = g_build_filename(dir, "new.csv", NULL);
  g_autofree char *base = g_path_get_basename(dir);
  g_autofree char *fresh2 = g_build_filename(dir, "..", base, "new.csv", NULL);
  assert_true(g_file_set_contents(in, "[scenario]\n", -1, NULL));
  assert_int_equal(symlink("in.ini", link), 0);
  g_autoptr(GError) e = NULL;
  dt_file_role r1[] = {{in, "the scenario file", FALSE}, {link, "--csv", TRUE}};
  assert_false(dt_files_distinct(r1, 2, &e));
  assert_non_null(strstr(e->message, "--csv:"));
  assert_non_null(strstr(e->message, "is also the scenario file"));
  g_clear_error(&e);
  dt_file_role r2[] = {{dotted, "--model", FALSE}, {in, "--trace", TRUE}};
  assert_false(dt_files_distinct(r2, 2, &e));
  g_clear_error(&e);
  dt_file_role r3[] = {{fresh, "--trace", TRUE}, {fresh2, "--plot", TRUE}};
  assert_false(dt_files_distinct(r3, 2, &e));
  assert_non_null(strstr(e->message, "is also the output of --trace"));
  g_clear_error(&e);
  dt_file_role r4[] = {{"lenet5", "--model", FALSE}, {in, "--model", FALSE},
                       {"/dev/null", "--csv", TRUE}, {"/dev/null", "--trace", TRUE},
                       {fresh, "--plot", TRUE}, {NULL, "--calibration", FALSE}};
  assert_true(dt_files_distinct(r4, 6, &e));   /* two inputs may be one file */
  g_unlink(link);
  g_unlink(in);
  g_rmdir(dir);
}

/* Messages: long words cut to 48 + ... + 32 bytes (on a character boundary); control
 * characters refused in values written into files. */
static void test_message_and_lines(void **state)
{
  g_autoptr(GString) w = g_string_new("unknown model '");
  for (int i = 0; i < 200; i++)
    g_string_append_c(w, (char)('a' + i % 26));
  g_string_append(w, "' here");
  g_autofree char *m = dt_message(w->str);
  /* "'" + 47 letters, "...", 31 letters + "'", then " here". */
  assert_int_equal(strlen(m), strlen("unknown model ") + 48 + 3 + 32 + strlen(" here"));
  assert_non_null(strstr(m, "'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu..."));
  g_autofree char *short_m = dt_message("a\nb c");
  assert_string_equal(short_m, "a\\nb c");
  g_autoptr(GError) e = NULL;
  assert_true(dt_check_line("tensorflow-2017 é", "--stack", &e));
  assert_false(dt_check_line("x\n[device]", "--stack", &e));
  assert_non_null(strstr(e->message, "--stack: 'x\\n[device]'"));
}

/* A search's jobs each get their share of --max-memory: with a limit of 100 MiB and 4 jobs,
 * 25 MiB passes and 26 MiB is refused naming the share and the jobs; one job has it all. */
static void test_memory_sharers(void **state)
{
  (void)state;
  dt_memory_set_limit(UINT64_C(100) << 20);
  dt_memory_set_sharers(4);
  g_autoptr(GError) error = NULL;
  assert_true(dt_memory_check(UINT64_C(25) << 20, "a graph", &error));
  assert_false(dt_memory_check(UINT64_C(26) << 20, "a graph", &error));
  assert_non_null(strstr(error->message, "more than its share of the limit, 25.0 MiB"));
  assert_non_null(strstr(error->message, "over 4 --jobs"));
  dt_memory_set_sharers(1);
  assert_true(dt_memory_check(UINT64_C(99) << 20, "a graph", NULL));
  dt_memory_set_limit(0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes), cmocka_unit_test(test_lists), cmocka_unit_test(test_ini),
      cmocka_unit_test(test_outfile), cmocka_unit_test(test_exit_status),
      cmocka_unit_test(test_outfile_targets), cmocka_unit_test(test_outfile_signals),
      cmocka_unit_test(test_scratch),
      cmocka_unit_test(test_read_file), cmocka_unit_test(test_escape),
      cmocka_unit_test(test_option_bytes), cmocka_unit_test(test_size_list),
      cmocka_unit_test(test_json_csv_writers), cmocka_unit_test(test_csv_split),
      cmocka_unit_test(test_outfile_hold),
      cmocka_unit_test(test_files_distinct), cmocka_unit_test(test_message_and_lines),
      cmocka_unit_test(test_memory_sharers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
