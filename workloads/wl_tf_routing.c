/* Group-limited expert routing (wl_tf expert_groups, group_topk): how many nodes a token's
 * routed copies reach when the experts lie in equal consecutive shares on the nodes of an
 * expert-parallel group. The closed forms are derived in docs/workloads.md ("Group-limited
 * routing"). */
#include "wl_transformer.h"

/* C(a - b, m) / C(a, m): the chance that m of a things drawn without replacement all miss b
 * given ones. */
static double miss_all(uint32_t a, uint32_t b, uint32_t m)
{
  double q = 1;
  for (uint32_t i = 0; i < m; i++)
    q *= a - b > i ? (double)(a - b - i) / (double)(a - i) : 0.0;
  return q;
}

double wl_tf_routed_nodes(const wl_tf *tf, uint32_t nodes)
{
  uint32_t E = tf->experts, k = tf->topk, G = tf->expert_groups, N = nodes;
  if (N <= 1 || E == 0 || k == 0 || E % N)
    return N == 1 ? 1 : 0;
  if (G == 0 || (G % N && N % G))
    /* No limit that whole nodes or groups follow: the k copies spread over all E experts, and
     * a node of E / N experts gets one when any copy lands there. */
    return N * (1 - miss_all(E, E / N, k));
  /* The chosen groups, each receiving at least one copy (the router ranks groups by their best
   * k / M experts' scores): at most k of them. */
  uint32_t m = MIN(tf->group_topk, k);
  if (G % N == 0)
    /* Each node holds G / N whole groups: it is reached when one of them is among the m drawn
     * from G. */
    return N * (1 - miss_all(G, G / N, m));
  /* Each group spans N / G nodes: a chosen group with c of the copies reaches each of its
   * nodes unless all c copies miss that node's E / N of the group's E / G experts; k mod m of
   * the groups take one copy more than the others. */
  uint32_t s = N / G, c = k / m, extra = k % m;
  double one = s * (1 - miss_all(E / G, E / N, c));
  double more = s * (1 - miss_all(E / G, E / N, c + 1));
  return (double)(m - extra) * one + (double)extra * more;
}
