/* dtsim-netwire: the shaped data network of the one-machine cluster (scripts/netns-cluster.sh).
 *
 * Each host is a network namespace holding a tun device (default name dtsim0) with address
 * SUBNET.i for host i (1-based, in the order the namespaces are named). This program attaches to
 * every host's tun device, reads the IPv4 packets each host sends, and writes each one into the
 * destination host's device at the time the link model of wire.h says it arrives: every host
 * has a full-duplex link of RATE bytes/s to a non-blocking switch, and every packet takes DELAY
 * more. No packet is dropped while fewer than --queue-limit bytes wait (TCP windows stay far
 * below it), so the network is the alpha-beta line the calibration fits, with no loss recovery
 * in the way. It stands in for tc's netem on kernels built without it.
 *
 *   dtsim-netwire --rate-Bps N --delay-ns N --subnet A.B.C.0 [--dev NAME] [--lead-ns N]
 *                 [--queue-limit SIZE] [--ready FILE] NAMESPACE...
 *
 * Timing: deliveries are timed with an absolute CLOCK_MONOTONIC timerfd armed --lead-ns early,
 * the rest of the way polled; the timer slack is set to 1 ns and the process asks for
 * SCHED_FIFO (falling back to nice -10), since the ranks of a one-machine cluster keep the
 * cores busy. A packet written late does not move later packets:
 * the model's clock is the schedule, not the writes. On SIGTERM or SIGINT it prints what it
 * carried and how late its deliveries were (median and 99th percentile, whole us) on standard
 * error and exits 0. */
#define _GNU_SOURCE
#include "util.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define WIRE_MAX_PACKET_BYTES 65536

typedef struct {
  int64_t deliver_ns;
  uint32_t bytes;
  uint8_t data[]; /* the IPv4 packet */
} packet;

typedef struct {
  int fd;          /* the host's tun device */
  GQueue queue;    /* packets for this host, in order of delivery time */
} host;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
  (void)sig;
  stop_requested = 1;
}

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...) G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN;
static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("dtsim-netwire: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

/* Opens the tun device `dev` inside network namespace `ns` (a name under /run/netns). */
static int attach(const char *ns, const char *dev, int home_ns_fd)
{
  g_autofree char *path = g_build_filename("/run/netns", ns, NULL);
  int ns_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0)
    die("namespace %s: %s: %s", ns, path, g_strerror(errno));
  if (setns(ns_fd, CLONE_NEWNET) != 0)
    die("namespace %s: cannot enter: %s", ns, g_strerror(errno));
  close(ns_fd);
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    die("/dev/net/tun: %s", g_strerror(errno));
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  g_strlcpy(ifr.ifr_name, dev, sizeof ifr.ifr_name);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0)
    die("namespace %s: cannot attach to tun device %s: %s", ns, dev, g_strerror(errno));
  if (setns(home_ns_fd, CLONE_NEWNET) != 0)
    die("cannot return to the first network namespace: %s", g_strerror(errno));
  return fd;
}

/* Scheduling help against ranks that keep every core busy; each step may be refused (no
 * privilege, a container's limits) and the wire still works, only less punctually. */
static const char *raise_priority(void)
{
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct sched_param sp = {.sched_priority = 10};
  if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
    return "SCHED_FIFO 10";
  if (setpriority(PRIO_PROCESS, 0, -10) == 0)
    return "nice -10";
  return "default";
}

/* Lateness of deliveries, in whole microseconds; the last bucket holds everything later. */
#define LATE_BUCKETS 100001

static double late_quantile_us(const uint64_t *late, uint64_t total, double q)
{
  uint64_t want = (uint64_t)(q * (double)(total - 1)), seen = 0;
  for (guint b = 0; b < LATE_BUCKETS; b++) {
    seen += late[b];
    if (seen > want)
      return b;
  }
  return LATE_BUCKETS - 1;
}

int main(int argc, char **argv)
{
  g_autofree char *rate_text = NULL, *delay_text = NULL, *subnet_text = NULL, *ready = NULL;
  g_autofree char *dev = NULL, *limit_text = NULL, *lead_text = NULL;
  GOptionEntry entries[] = {
      {"rate-Bps", 0, 0, G_OPTION_ARG_STRING, &rate_text, "link rate, bytes/s", "N"},
      {"delay-ns", 0, 0, G_OPTION_ARG_STRING, &delay_text, "one-way delay, ns", "N"},
      {"subnet", 0, 0, G_OPTION_ARG_STRING, &subnet_text, "hosts' /24, host i is .i", "A.B.C.0"},
      {"dev", 0, 0, G_OPTION_ARG_STRING, &dev, "tun device in every namespace (dtsim0)", "NAME"},
      {"queue-limit", 0, 0, G_OPTION_ARG_STRING, &limit_text,
       "bytes waiting in the wire before it drops (256M)", "SIZE"},
      {"lead-ns", 0, 0, G_OPTION_ARG_STRING, &lead_text,
       "wake this early and poll the rest of the way to a delivery (60000)", "N"},
      {"ready", 0, 0, G_OPTION_ARG_STRING, &ready, "file created once attached", "FILE"},
      {NULL, 0, 0, 0, NULL, NULL, NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("NAMESPACE...");
  g_option_context_set_summary(ctx, "Carries IPv4 between the tun devices of network "
                                    "namespaces with a link rate and a delay.");
  dt_option_entries_as_bytes(entries);
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error))
    die("%s", error->message);
  if (!rate_text || !delay_text || !subnet_text)
    die("--rate-Bps, --delay-ns and --subnet are required");
  int64_t rate_Bps, delay_ns;
  uint64_t limit_bytes = 256u << 20;
  /* 60 us: above the 99th percentile of how late an absolute timer woke a SCHED_FIFO
   * process on the 2-core virtual machine this was tuned on (median 30 us). */
  int64_t lead_ns = 60000;
  if (!dt_parse_int64(rate_text, "--rate-Bps", 1000, INT64_C(1000000000000), &rate_Bps, &error) ||
      !dt_parse_int64(delay_text, "--delay-ns", 0, INT64_C(10000000000), &delay_ns, &error) ||
      (limit_text && !dt_parse_size(limit_text, "--queue-limit", &limit_bytes, &error)) ||
      (lead_text && !dt_parse_int64(lead_text, "--lead-ns", 0, 10000000, &lead_ns, &error)))
    die("%s", error->message);
  struct in_addr subnet;
  if (inet_pton(AF_INET, subnet_text, &subnet) != 1 || (ntohl(subnet.s_addr) & 0xff) != 0)
    die("--subnet: '%s' is not an IPv4 /24 network address such as 198.18.71.0", subnet_text);
  guint n = (guint)argc - 1;
  if (n < 2 || n > 254)
    die("give 2 to 254 namespace names, got %u", n);

  int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0)
    die("/proc/self/ns/net: %s", g_strerror(errno));
  host *hosts = g_new0(host, n);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (guint i = 0; i < n; i++) {
    hosts[i].fd = attach(argv[i + 1], dev ? dev : "dtsim0", home);
    g_queue_init(&hosts[i].queue);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
    epoll_ctl(ep, EPOLL_CTL_ADD, hosts[i].fd, &ev);
  }
  close(home);
  int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  struct epoll_event tev = {.events = EPOLLIN, .data.u32 = n};
  epoll_ctl(ep, EPOLL_CTL_ADD, timer, &tev);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  const char *priority = raise_priority();

  g_autoptr(comm_wire) wire = comm_wire_new(n, (uint64_t)rate_Bps, delay_ns);
  uint32_t base = ntohl(subnet.s_addr);
  uint64_t carried = 0, carried_bytes = 0, dropped = 0, waiting_bytes = 0;
  uint64_t *late = g_new0(uint64_t, LATE_BUCKETS), delivered = 0;
  uint8_t *buf = g_malloc(WIRE_MAX_PACKET_BYTES);
  if (ready) {
    if (!g_file_set_contents(ready, "ready\n", -1, &error))
      die("%s", error->message);
  }
  fprintf(stderr, "dtsim-netwire: %u hosts, %" G_GINT64_FORMAT " B/s, %" G_GINT64_FORMAT
                  " ns, scheduling %s\n", n, rate_Bps, delay_ns, priority);

  while (!stop_requested) {
    /* Deliver what is due, then arm the timer for the earliest packet still waiting. */
    int64_t t = now_ns(), next = INT64_MAX;
    for (guint i = 0; i < n; i++) {
      packet *p;
      while ((p = g_queue_peek_head(&hosts[i].queue)) && p->deliver_ns <= t) {
        g_queue_pop_head(&hosts[i].queue);
        if (write(hosts[i].fd, p->data, p->bytes) != (ssize_t)p->bytes)
          dropped++;
        late[MIN((t - p->deliver_ns) / 1000, LATE_BUCKETS - 1)]++;
        delivered++;
        waiting_bytes -= p->bytes;
        g_free(p);
        t = now_ns();
      }
      if (p && p->deliver_ns < next)
        next = p->deliver_ns;
    }
    /* A timer wakes this process tens of microseconds late on a virtual machine, so it is
     * armed `lead` early and the last stretch is spent polling (which also reads packets
     * as they come, so none waits for the spin to end). */
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    int timeout_ms = -1;
    if (next != INT64_MAX && next - t <= lead_ns)
      timeout_ms = 0;
    else if (next != INT64_MAX) {
      its.it_value.tv_sec = (next - lead_ns) / 1000000000;
      its.it_value.tv_nsec = (next - lead_ns) % 1000000000;
    }
    if (timeout_ms != 0)
      timerfd_settime(timer, TFD_TIMER_ABSTIME, &its, NULL);

    struct epoll_event evs[64];
    int k = epoll_wait(ep, evs, 64, timeout_ms);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      die("epoll_wait: %s", g_strerror(errno));
    }
    for (int e = 0; e < k; e++) {
      guint src = evs[e].data.u32;
      if (src == n) {
        uint64_t expirations;
        if (read(timer, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
          die("timerfd: %s", g_strerror(errno));
        continue;
      }
      for (;;) {
        ssize_t len = read(hosts[src].fd, buf, WIRE_MAX_PACKET_BYTES);
        if (len < 0) {
          if (errno == EAGAIN || errno == EINTR)
            break;
          die("host %u: read: %s", src + 1, g_strerror(errno));
        }
        /* IPv4 only; the destination address is bytes 16..19 of the header. Anything else
         * (IPv6 neighbour discovery, addresses outside the hosts) is not the cluster's. */
        if (len < 20 || (buf[0] >> 4) != 4) {
          dropped++;
          continue;
        }
        uint32_t daddr;
        memcpy(&daddr, buf + 16, sizeof daddr);
        uint32_t d = ntohl(daddr) - base;
        if (d < 1 || d > n || d - 1 == src || waiting_bytes + (uint64_t)len > limit_bytes) {
          dropped++;
          continue;
        }
        packet *p = g_malloc(sizeof *p + (size_t)len);
        p->bytes = (uint32_t)len;
        memcpy(p->data, buf, (size_t)len);
        p->deliver_ns = comm_wire_schedule(wire, src, d - 1, p->bytes, now_ns());
        g_queue_push_tail(&hosts[d - 1].queue, p);
        waiting_bytes += p->bytes;
        carried++;
        carried_bytes += p->bytes;
      }
    }
  }

  double median = delivered ? late_quantile_us(late, delivered, 0.5) : 0;
  double p99 = delivered ? late_quantile_us(late, delivered, 0.99) : 0;
  fprintf(stderr, "dtsim-netwire: carried %" G_GUINT64_FORMAT " packets (%" G_GUINT64_FORMAT
                  " bytes), dropped %" G_GUINT64_FORMAT ", delivered late by %.0f us median, "
                  "%.0f us at the 99th percentile\n", carried, carried_bytes, dropped, median, p99);
  for (guint i = 0; i < n; i++) {
    g_queue_clear_full(&hosts[i].queue, g_free);
    close(hosts[i].fd);
  }
  g_free(hosts);
  g_free(buf);
  g_free(late);
  close(timer);
  close(ep);
  return 0;
}
