/* dtsim-mpi replay of a ps scenario: the parameter servers of comm/coll played by MPI ranks.
 *
 * Every worker rank replays device 0's timeline. When a layer's weight gradient (its dW task)
 * has been computed, the worker sends the tensor's bytes to the rank playing the shard that
 * holds it (push) and posts the receive of the updated parameters (pull); the push/pull task
 * ends when the pull is back, and the layer's forward in the next iteration waits for it, as
 * in the simulated graph (sim/strategies/strategy_ps.c). The tensors are placed on shards by comm/coll's
 * own rule (comm_ps_place_tensors) and the shards on ranks by comm_mpi_ps_server_rank().
 *
 * A server waits for every worker's push of a tensor, then aggregates and updates it, one
 * tensor at a time per shard in the order they became complete, then sends the parameters to
 * every worker. The aggregation is not computed: its simulated duration (workers x bytes at
 * the server's rate, sim_ps_server_reduce_Bps) is waited out, as the compute tasks are. That
 * is what the replay compares: the simulated server is a 2016-era Xeon socket (or a GPU) whose
 * memory speed is a datasheet estimate, not this machine's core, which a real MPI_Reduce_local
 * would time instead while sharing the core with a busy-waiting worker; waiting out the
 * simulated time keeps compute and aggregation simulated and leaves only the network real. The
 * wait is a deadline in the progress loop, not a busy-wait that blocks it, so transfers of other
 * tensors keep moving meanwhile, as the model's aggregation unit and network are independent.
 *
 * One thread per rank (the communication thread) calls MPI, with nonblocking requests only:
 * it starts the pushes the compute thread queues, posts one receive per worker for the pushes
 * of the shards it serves (any tag, in arrival order: messages between two ranks arrive in the
 * order they were sent, so each worker needs one buffer of the largest tensor rather than one
 * per tensor), and tests all requests in turn. Pushes and pulls go on two communicators of
 * their own, tagged with the tensor's index. Buffers are allocated but never read: the bytes
 * moved are what matters (they are filled once, to touch their pages). */
#include "replay_internal.h"
#include "util.h"

#include <string.h>

typedef enum { REQ_PUSH_SEND, REQ_PULL_RECV, REQ_SERVER_RECV, REQ_PULL_SEND } req_kind;

typedef struct {
  req_kind kind;
  guint index;    /* push and pull: the communication task; server receive: the worker */
} req_info;

struct replay_ps {
  replay_comm *rc;
  MPI_Comm push_comm, pull_comm;
  uint32_t tensors, servers, workers;
  uint64_t *tensor_bytes;       /* per tensor */
  uint32_t *shard_of;           /* per tensor */
  int *shard_rank;              /* per shard: the MPI rank that plays it */
  int *worker_rank;             /* per worker: its MPI rank */
  gboolean is_worker;
  double server_Bps;

  /* Worker: pushes are sent from one buffer (send buffers may overlap), pulls land in one slot
   * per tensor (the worker's parameters). */
  char *grad, *params;
  uint64_t *param_offset;       /* per tensor */

  /* Server: one push buffer per worker, pulls sent from one buffer. */
  uint64_t serve_max_bytes;     /* largest tensor this rank serves, 0: none */
  char *serve_recv, *serve_send;
  uint32_t *pushes_left;        /* per worker: pushes still to come to this rank */
  uint32_t *arrived;            /* per tensor: pushes of its current iteration arrived */
  uint32_t *next_iteration;     /* per tensor: iteration of its next aggregation */
  double *free_at_s;            /* per shard: when its aggregation unit is next idle */
  GArray *aggs;                 /* replay_ps_aggregation, in the order taken */
  GArray *pulled;               /* gboolean per aggregation: its pulls have been sent */
  guint first_unpulled;
  uint64_t pull_sends_left;

  /* Requests in flight, with what each is for; MPI_Testsome's output arrays. */
  GArray *reqs;                 /* MPI_Request */
  GArray *infos;                /* req_info */
  int *indices;
  MPI_Status *statuses;
  guint cap;
};

replay_ps *replay_ps_new(const comm_mpi_ctx *ctx, const replay_ps_config *cfg, replay_comm *rc,
                         GError **error)
{
  g_return_val_if_fail(cfg->servers > 0 && cfg->nodes > 0 && cfg->per_node > 0, NULL);
  int tag_ub = 32767, *attr = NULL, flag = 0;  /* 32767: the least MPI guarantees */
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag);
  if (flag && attr)
    tag_ub = *attr;
  if ((int64_t)cfg->tensors > tag_ub) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "ps replay: %u tensors are more than the %d message tags MPI offers",
                cfg->tensors, tag_ub);
    return NULL;
  }
  for (uint32_t t = 0; t < cfg->tensors; t++) {
    if (cfg->tensor_bytes[t] > (uint64_t)G_MAXINT) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "ps replay: tensor %u has %" G_GUINT64_FORMAT " bytes, more than one MPI "
                  "message of bytes carries (%d)", t, cfg->tensor_bytes[t], G_MAXINT);
      return NULL;
    }
  }
  g_autoptr(replay_ps) ps = g_new0(replay_ps, 1);
  ps->rc = rc;
  ps->push_comm = ps->pull_comm = MPI_COMM_NULL;
  ps->tensors = cfg->tensors;
  ps->servers = cfg->servers;
  ps->workers = cfg->nodes * cfg->per_node;
  ps->server_Bps = cfg->server_reduce_Bps;
  ps->tensor_bytes = g_memdup2(cfg->tensor_bytes, MAX(cfg->tensors, 1) * sizeof(uint64_t));
  ps->shard_of = g_new0(uint32_t, MAX(cfg->tensors, 1));
  comm_ps_place_tensors(ps->tensor_bytes, ps->tensors, ps->servers, ps->shard_of);
  ps->worker_rank = g_memdup2(cfg->worker_rank, ps->workers * sizeof(int));
  ps->shard_rank = g_new(int, ps->servers);
  for (uint32_t k = 0; k < ps->servers; k++) {
    uint32_t r = comm_mpi_ps_server_rank(cfg->placement, k, ps->servers, cfg->nodes,
                                         cfg->per_node);
    /* Workers are numbered node-major; dedicated servers are the MPI ranks after them. */
    ps->shard_rank[k] = r < ps->workers ? ps->worker_rank[r] : (int)r;
    g_return_val_if_fail(ps->shard_rank[k] < ctx->size, NULL);
  }
  for (uint32_t w = 0; w < ps->workers; w++)
    ps->is_worker |= ps->worker_rank[w] == ctx->rank;

  uint64_t max_bytes = 0, total = 0;
  ps->param_offset = g_new0(uint64_t, MAX(ps->tensors, 1));
  uint32_t served = 0;
  for (uint32_t t = 0; t < ps->tensors; t++) {
    ps->param_offset[t] = total;
    total += ps->tensor_bytes[t];
    max_bytes = MAX(max_bytes, ps->tensor_bytes[t]);
    if (ps->shard_rank[ps->shard_of[t]] == ctx->rank) {
      served++;
      ps->serve_max_bytes = MAX(ps->serve_max_bytes, ps->tensor_bytes[t]);
    }
  }
  if (ps->is_worker) {
    ps->grad = g_malloc(MAX(max_bytes, 1));
    ps->params = g_malloc(MAX(total, 1));
  }
  ps->pushes_left = g_new0(uint32_t, ps->workers);
  if (served > 0) {
    ps->serve_recv = g_malloc(ps->serve_max_bytes * ps->workers);
    ps->serve_send = g_malloc(ps->serve_max_bytes);
    for (uint32_t w = 0; w < ps->workers; w++)
      ps->pushes_left[w] = served * cfg->iterations;
  }
  ps->pull_sends_left = (uint64_t)served * cfg->iterations * ps->workers;
  ps->arrived = g_new0(uint32_t, MAX(ps->tensors, 1));
  ps->next_iteration = g_new0(uint32_t, MAX(ps->tensors, 1));
  ps->free_at_s = g_new0(double, ps->servers);
  ps->aggs = g_array_new(FALSE, FALSE, sizeof(replay_ps_aggregation));
  ps->pulled = g_array_new(FALSE, FALSE, sizeof(gboolean));
  ps->reqs = g_array_new(FALSE, FALSE, sizeof(MPI_Request));
  ps->infos = g_array_new(FALSE, FALSE, sizeof(req_info));
  MPI_Comm_dup(MPI_COMM_WORLD, &ps->push_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &ps->pull_comm);
  /* Warm-up outside the timed replay, which the model has no term for: the buffers' pages are
   * touched once (a fresh allocation faults on its first write), and every pair of ranks
   * exchanges a message on both communicators (Open MPI connects peers on first use). */
  if (ps->grad) {
    memset(ps->grad, 1, MAX(max_bytes, 1));
    memset(ps->params, 1, MAX(total, 1));
  }
  if (ps->serve_recv) {
    memset(ps->serve_recv, 1, ps->serve_max_bytes * ps->workers);
    memset(ps->serve_send, 1, ps->serve_max_bytes);
  }
  g_autofree char *one = g_malloc0((size_t)ctx->size), *all = g_malloc0((size_t)ctx->size);
  MPI_Alltoall(one, 1, MPI_BYTE, all, 1, MPI_BYTE, ps->push_comm);
  MPI_Alltoall(one, 1, MPI_BYTE, all, 1, MPI_BYTE, ps->pull_comm);
  return g_steal_pointer(&ps);
}

void replay_ps_free(replay_ps *ps)
{
  if (ps == NULL)
    return;
  if (ps->push_comm != MPI_COMM_NULL)
    MPI_Comm_free(&ps->push_comm);
  if (ps->pull_comm != MPI_COMM_NULL)
    MPI_Comm_free(&ps->pull_comm);
  g_free(ps->tensor_bytes);
  g_free(ps->shard_of);
  g_free(ps->shard_rank);
  g_free(ps->worker_rank);
  g_free(ps->grad);
  g_free(ps->params);
  g_free(ps->param_offset);
  g_free(ps->serve_recv);
  g_free(ps->serve_send);
  g_free(ps->pushes_left);
  g_free(ps->arrived);
  g_free(ps->next_iteration);
  g_free(ps->free_at_s);
  if (ps->aggs)
    g_array_free(ps->aggs, TRUE);
  if (ps->pulled)
    g_array_free(ps->pulled, TRUE);
  if (ps->reqs)
    g_array_free(ps->reqs, TRUE);
  if (ps->infos)
    g_array_free(ps->infos, TRUE);
  g_free(ps->indices);
  g_free(ps->statuses);
  g_free(ps);
}

gboolean replay_ps_is_worker(const replay_ps *ps)
{
  return ps->is_worker;
}

uint32_t replay_ps_shard_of(const replay_ps *ps, uint32_t tensor)
{
  g_return_val_if_fail(tensor < ps->tensors, 0);
  return ps->shard_of[tensor];
}

int replay_ps_shard_rank(const replay_ps *ps, uint32_t shard)
{
  g_return_val_if_fail(shard < ps->servers, 0);
  return ps->shard_rank[shard];
}

const replay_ps_aggregation *replay_ps_aggregations(const replay_ps *ps, guint *n)
{
  *n = ps->aggs->len;
  return (const replay_ps_aggregation *)(void *)ps->aggs->data;
}

/* ---- The communication thread --------------------------------------------------------------- */

static void add_req(replay_ps *ps, MPI_Request r, req_kind kind, guint index)
{
  req_info info = {kind, index};
  g_array_append_val(ps->reqs, r);
  g_array_append_val(ps->infos, info);
}

static double elapsed_s(const replay_ps *ps)
{
  return replay__now_s() - ps->rc->t0;
}

/* The worker's dW task has finished: push the gradient, and expect the parameters back. */
static void start_push(replay_ps *ps, guint c)
{
  replay_task *t = &g_array_index(ps->rc->comms, replay_task, c);
  int server = ps->shard_rank[ps->shard_of[t->tensor]];
  int count = (int)ps->tensor_bytes[t->tensor];
  MPI_Request r;
  t->real_start_s = elapsed_s(ps);
  MPI_Irecv(ps->params + ps->param_offset[t->tensor], count, MPI_BYTE, server, (int)t->tensor,
            ps->pull_comm, &r);
  add_req(ps, r, REQ_PULL_RECV, c);
  MPI_Isend(ps->grad, count, MPI_BYTE, server, (int)t->tensor, ps->push_comm, &r);
  add_req(ps, r, REQ_PUSH_SEND, c);
}

static void post_server_recv(replay_ps *ps, uint32_t w)
{
  MPI_Request r;
  MPI_Irecv(ps->serve_recv + (size_t)w * ps->serve_max_bytes, (int)ps->serve_max_bytes, MPI_BYTE,
            ps->worker_rank[w], MPI_ANY_TAG, ps->push_comm, &r);
  add_req(ps, r, REQ_SERVER_RECV, w);
}

/* A push of `tensor` has arrived from worker `w`; once all have, the tensor's shard takes it
 * when its aggregation unit is free, for workers x bytes at the server's rate. */
static void on_push(replay_ps *ps, uint32_t w, uint32_t tensor)
{
  g_assert(tensor < ps->tensors && ps->pushes_left[w] > 0);
  if (--ps->pushes_left[w] > 0)
    post_server_recv(ps, w);
  if (++ps->arrived[tensor] < ps->workers)
    return;
  /* A worker pushes a tensor's next iteration only after its pull of this one, which is sent
   * after this aggregation: the count can start again. */
  ps->arrived[tensor] = 0;
  uint32_t k = ps->shard_of[tensor];
  double start = MAX(elapsed_s(ps), ps->free_at_s[k]);
  double work_bytes = (double)ps->tensor_bytes[tensor] * ps->workers;
  double end = start + (ps->server_Bps > 0 ? work_bytes / ps->server_Bps : 0);
  ps->free_at_s[k] = end;
  replay_ps_aggregation a = {tensor, ps->next_iteration[tensor]++, k, start, end};
  gboolean no = FALSE;
  g_array_append_val(ps->aggs, a);
  g_array_append_val(ps->pulled, no);
}

/* Sends the pulls of every aggregation that has ended. */
static gboolean post_due_pulls(replay_ps *ps)
{
  gboolean any = FALSE;
  double now = elapsed_s(ps);
  for (guint i = ps->first_unpulled; i < ps->aggs->len; i++) {
    const replay_ps_aggregation *a = &g_array_index(ps->aggs, replay_ps_aggregation, i);
    gboolean *pulled = &g_array_index(ps->pulled, gboolean, i);
    if (*pulled || a->end_s > now)
      continue;
    uint32_t t = (uint32_t)a->tensor;
    for (uint32_t w = 0; w < ps->workers; w++) {
      MPI_Request r;
      MPI_Isend(ps->serve_send, (int)ps->tensor_bytes[t], MPI_BYTE, ps->worker_rank[w], (int)t,
                ps->pull_comm, &r);
      add_req(ps, r, REQ_PULL_SEND, w);
    }
    *pulled = TRUE;
    any = TRUE;
  }
  while (ps->first_unpulled < ps->aggs->len &&
         g_array_index(ps->pulled, gboolean, ps->first_unpulled))
    ps->first_unpulled++;
  return any;
}

/* Tests every request in flight once; handles those that completed. */
static gboolean test_requests(replay_ps *ps)
{
  guint n = ps->reqs->len;
  if (n == 0)
    return FALSE;
  if (n > ps->cap) {
    ps->cap = MAX(n, 2 * ps->cap);
    ps->indices = g_renew(int, ps->indices, ps->cap);
    ps->statuses = g_renew(MPI_Status, ps->statuses, ps->cap);
  }
  int outcount = 0;
  MPI_Testsome((int)n, (MPI_Request *)(void *)ps->reqs->data, &outcount, ps->indices,
               ps->statuses);
  if (outcount == MPI_UNDEFINED || outcount == 0)
    return FALSE;
  for (int i = 0; i < outcount; i++) {
    req_info info = g_array_index(ps->infos, req_info, ps->indices[i]);
    switch (info.kind) {
    case REQ_PULL_RECV: {
      replay_task *t = &g_array_index(ps->rc->comms, replay_task, info.index);
      t->real_end_s = elapsed_s(ps);
      g_atomic_int_set(&ps->rc->done[info.index], 1);
      break;
    }
    case REQ_SERVER_RECV:
      on_push(ps, info.index, (uint32_t)ps->statuses[i].MPI_TAG);
      break;
    case REQ_PULL_SEND:
      ps->pull_sends_left--;
      break;
    case REQ_PUSH_SEND:
      break;
    }
  }
  /* Completed requests are MPI_REQUEST_NULL now; requests added while handling are kept. */
  guint kept = 0;
  for (guint i = 0; i < ps->reqs->len; i++) {
    if (g_array_index(ps->reqs, MPI_Request, i) == MPI_REQUEST_NULL)
      continue;
    g_array_index(ps->reqs, MPI_Request, kept) = g_array_index(ps->reqs, MPI_Request, i);
    g_array_index(ps->infos, req_info, kept) = g_array_index(ps->infos, req_info, i);
    kept++;
  }
  g_array_set_size(ps->reqs, kept);
  g_array_set_size(ps->infos, kept);
  return TRUE;
}

/* Starts a queued push; TRUE when the item was the end of the replay. */
static gboolean take(replay_ps *ps, gpointer item)
{
  guint idx = GPOINTER_TO_UINT(item);
  if (idx == REPLAY_STOP)
    return TRUE;
  start_push(ps, idx - 1);
  return FALSE;
}

gpointer replay_ps_main(gpointer data)
{
  replay_ps *ps = data;
  replay_comm *rc = ps->rc;
  for (uint32_t w = 0; w < ps->workers; w++)
    if (ps->pushes_left[w] > 0)
      post_server_recv(ps, w);
  /* Runs until the compute thread is done (its pulls are back) and this rank's servers have
   * sent every pull and every request has completed. */
  gboolean stopped = FALSE;
  while (!stopped || ps->reqs->len > 0 || ps->pull_sends_left > 0) {
    gboolean progressed = FALSE;
    gpointer item;
    while ((item = g_async_queue_try_pop(rc->queue)) != NULL) {
      stopped |= take(ps, item);
      progressed = TRUE;
    }
    progressed |= test_requests(ps);
    progressed |= post_due_pulls(ps);
    if (progressed)
      continue;
    if (ps->reqs->len == 0 && ps->first_unpulled == ps->aggs->len) {
      /* Nothing in flight and nothing to serve: the next push, or the end, is all there is. */
      g_assert(ps->pull_sends_left == 0);
      if (!stopped)
        stopped |= take(ps, g_async_queue_pop(rc->queue));
    } else if (rc->sleep && ps->reqs->len == 0) {
      /* Only an aggregation's deadline to wait for. */
      g_usleep(20);
    } else {
      /* Transfers need this thread to progress them: poll, but let the compute threads of
       * the ranks sharing the core run in between, as Open MPI's own waits do when the
       * machine is oversubscribed. */
      g_thread_yield();
    }
  }
  return NULL;
}
