/* Replays files through one fuzz harness without libFuzzer: the ctest label fuzz-regression
 * runs every seed and every crash reproducer this way in the normal (GCC, ASan) build.
 *
 *   fuzz_replay_NAME PATH...      each PATH a file or a folder (read recursively, sorted)
 *
 * Exits 0 after replaying at least one file; an invariant failure or sanitizer report aborts.
 * A missing path, or arguments that hold no file at all, are errors, so a mistyped corpus path
 * cannot pass silently. Files whose names start with '.' (.gitkeep) are skipped. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECONDS_PER_INPUT 10

static gint compare_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays `path` and returns the number of files replayed. */
static unsigned replay(const char *path)
{
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    GError *error = NULL;
    GDir *dir = g_dir_open(path, 0, &error);
    if (!dir) {
      fprintf(stderr, "fuzz_replay: %s\n", error->message);
      exit(2);
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *entry;
    while ((entry = g_dir_read_name(dir)) != NULL)
      if (entry[0] != '.')
        g_ptr_array_add(names, g_build_filename(path, entry, NULL));
    g_dir_close(dir);
    g_ptr_array_sort(names, compare_names);
    unsigned n = 0;
    for (guint i = 0; i < names->len; i++)
      n += replay(g_ptr_array_index(names, i));
    return n;
  }
  g_autofree char *data = NULL;
  gsize len = 0;
  GError *error = NULL;
  if (!g_file_get_contents(path, &data, &len, &error)) {
    fprintf(stderr, "fuzz_replay: %s\n", error->message);
    exit(2);
  }
  /* libFuzzer hands over a buffer of exactly the input's size; so does this copy, which lets
   * ASan see a read one byte past the end. */
  uint8_t *copy = g_memdup2(data, len);
  gint64 start_us = g_get_monotonic_time();
  LLVMFuzzerTestOneInput(copy, len);
  double took_s = (double)(g_get_monotonic_time() - start_us) / 1e6;
  g_free(copy);
  /* bench/fuzz runs libFuzzer with -timeout=10: an input that slow is a hang, here too. */
  if (took_s > MAX_SECONDS_PER_INPUT) {
    fprintf(stderr, "fuzz_replay: %s took %.1f s (a hang: more than %d s)\n", path, took_s,
            MAX_SECONDS_PER_INPUT);
    abort();
  }
  return 1;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  unsigned total = 0;
  for (int i = 1; i < argc; i++) {
    unsigned before = fuzz_accepted_count();
    unsigned n = replay(argv[i]);
    printf("%s: %u inputs replayed, %u accepted\n", argv[i], n, fuzz_accepted_count() - before);
    total += n;
  }
  if (total == 0) {
    fprintf(stderr, "fuzz_replay: no input to replay\n");
    return 2;
  }
  return 0;
}
