/* Dies sharing a board (sim/costs.c, devices/): a Tesla K80's two dies hold 718 MHz alone and
 * 670 MHz with both busy ([device] board_busy_clock_mhz). The devices of a node fill the boards
 * in order, so the cost table of a run with two or more devices per node on gce-k80x8 (four
 * boards) has every arithmetic-bound pass 718 / 670 times longer than with one, and streaming
 * passes as long; the preset's eight devices count as eight. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "simulate.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* alexnet_owt at batch 64 on gce-k80x8 with `per_node` devices per node (NULL: the preset's). */
static sim_costs *k80_costs(const char *per_node)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  assert_true(sim_scenario_set(&s, "model", "alexnet_owt", NULL, NULL));
  assert_true(sim_scenario_set(&s, "system", "gce-k80x8", NULL, NULL));
  assert_true(sim_scenario_set(&s, "batch", "64", NULL, NULL));
  if (per_node)
    assert_true(sim_scenario_set(&s, "devices-per-node", per_node, NULL, NULL));
  g_autoptr(GError) error = NULL;
  sim_costs *c = sim_costs_build(&s, "k80", 64, &error);
  if (!c)
    fail_msg("%s", error->message);
  return c;
}

static const sim_layer_cost *layer(const sim_costs *c, const char *name)
{
  for (guint i = 0; i < sim_costs_n_layers(c); i++)
    if (strcmp(sim_costs_layer(c, i)->name, name) == 0)
      return sim_costs_layer(c, i);
  fail_msg("no layer %s", name);
  return NULL;
}

static void test_board_clock(void **state)
{
  (void)state;
  g_autoptr(sim_costs) one = k80_costs("1");
  g_autoptr(sim_costs) two = k80_costs("2");
  g_autoptr(sim_costs) eight = k80_costs(NULL);
  /* conv1 (11x11, stride 4: no Winograd) at batch 64 is 8.7 GFLOP, about 5 ms of arithmetic
   * against 12 MB of traffic: the ratio is the clocks', up to the 6 us launch (1e-3). */
  const sim_layer_cost *a = layer(one, "conv1"), *b = layer(two, "conv1"),
                       *c = layer(eight, "conv1");
  assert_true(fabs((double)b->forward_ps / (double)a->forward_ps - 718.0 / 670.0) < 2e-3);
  assert_int_equal(b->forward_ps, c->forward_ps);
  /* A ReLU streams its tensor: the memory clock does not move. */
  assert_int_equal(layer(one, "conv1/relu")->forward_ps, layer(two, "conv1/relu")->forward_ps);
  /* Three devices: the first board is full, and the step waits for its dies. */
  g_autoptr(sim_costs) three = k80_costs("3");
  assert_int_equal(layer(three, "conv1")->forward_ps, b->forward_ps);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_board_clock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
