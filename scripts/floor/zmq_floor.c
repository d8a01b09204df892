/* The floor for the transport benchmark: the same workloads as Sources/Tools/opbench/StreamBench.swift,
 * written directly against libzmq's C API.
 *
 *   cc -O2 -o zmq_floor zmq_floor.c -lzmq -lpthread
 *   zmq_floor stream N SIZE     DEALER -> ROUTER one-way stream over tcp loopback, two threads of one
 *                               process sharing one context (1 I/O thread). Prints msgs_per_s.
 *   zmq_floor roundtrip N SIZE  DEALER <-> ROUTER ping-pong between two processes (fork) over tcp
 *                               loopback, one message in flight. Prints p50_us / p99_us.
 *   zmq_floor echo              ROUTER echo server for another program's round trips: prints its
 *                               endpoint on stdout, echoes until it receives an empty payload.
 *
 * Output is one line of key=value pairs. Timing: monotonic clock; the stream is timed on the receiver
 * from the warm-up message until the Nth after it. cpu_ns_per_msg is the process's CPU time (every
 * thread) over the same span divided by N: steadier than msgs/s when other processes share the cores.
 */
#include <zmq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of the whole process (all threads, libzmq's I/O thread included). */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what) {
    fprintf(stderr, "zmq_floor: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

struct sender_args { void *ctx; const char *endpoint; long n; size_t size; };

static void *sender(void *p) {
    struct sender_args *a = p;
    void *s = zmq_socket(a->ctx, ZMQ_DEALER);
    int linger = 10000; /* closing right after the last send must not drop what is still queued */
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s, a->endpoint) != 0) die("connect");
    char *buf = calloc(1, a->size ? a->size : 1);
    if (zmq_send(s, buf, a->size, 0) < 0) die("send warm-up");
    for (long i = 0; i < a->n; i++)
        if (zmq_send(s, buf, a->size, 0) < 0) die("send");
    free(buf);
    zmq_close(s);
    return NULL;
}

static int stream(long n, size_t size) {
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0, timeout = 10000;
    zmq_setsockopt(r, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_bind(r, "tcp://127.0.0.1:*") != 0) die("bind");
    char endpoint[256]; size_t len = sizeof endpoint;
    zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, endpoint, &len);

    struct sender_args args = { ctx, endpoint, n, size };
    pthread_t t;
    pthread_create(&t, NULL, sender, &args);

    zmq_msg_t id, body;
    zmq_msg_init(&id); zmq_msg_init(&body);
    double t0 = 0, c0 = 0;
    for (long i = 0; i <= n; i++) {
        if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&body, r, 0) < 0) die("recv");
        if (i == 0) { t0 = now_s(); c0 = cpu_s(); }
    }
    double secs = now_s() - t0, cpu = cpu_s() - c0;
    zmq_msg_close(&id); zmq_msg_close(&body);
    pthread_join(t, NULL);
    zmq_close(r);
    zmq_ctx_term(ctx);
    printf("mode=stream n=%ld size=%zu secs=%.6f msgs_per_s=%.0f cpu_ns_per_msg=%.1f\n", n, size, secs, n / secs, cpu * 1e9 / n);
    return 0;
}

/* Echoes [id, payload] until an empty payload arrives. Writes its endpoint to fd `out`. */
static int echo_server(int out) {
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0, timeout = 30000;
    zmq_setsockopt(r, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_bind(r, "tcp://127.0.0.1:*") != 0) die("bind");
    char endpoint[256]; size_t len = sizeof endpoint;
    zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, endpoint, &len);
    dprintf(out, "%s\n", endpoint);
    zmq_msg_t id, body;
    zmq_msg_init(&id); zmq_msg_init(&body);
    for (;;) {
        if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&body, r, 0) < 0) break; /* timeout: give up */
        int last = zmq_msg_size(&body) == 0;
        if (zmq_msg_send(&id, r, ZMQ_SNDMORE) < 0 || zmq_msg_send(&body, r, 0) < 0) die("echo send");
        if (last) break;
    }
    zmq_msg_close(&id); zmq_msg_close(&body);
    zmq_close(r);
    zmq_ctx_term(ctx);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int roundtrip(long n, size_t size) {
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); return 1; }
    pid_t child = fork();
    if (child == 0) { close(fds[0]); _exit(echo_server(fds[1])); }
    close(fds[1]);
    char endpoint[256] = {0};
    FILE *in = fdopen(fds[0], "r");
    if (!fgets(endpoint, sizeof endpoint, in)) { fprintf(stderr, "no endpoint from child\n"); return 1; }
    endpoint[strcspn(endpoint, "\n")] = 0;

    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, timeout = 10000;
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(d, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_connect(d, endpoint) != 0) die("connect");
    size_t bufsize = size ? size : 1;
    char *buf = calloc(1, bufsize);
    memset(buf, 'x', bufsize);
    char *back = malloc(bufsize + 1);
    double *lat = malloc(sizeof(double) * n);
    long warm = n / 10 < 1000 ? n / 10 : 1000;
    for (long i = -warm; i < n; i++) {
        double t0 = now_s();
        if (zmq_send(d, buf, size ? size : 1, 0) < 0) die("send");
        if (zmq_recv(d, back, bufsize + 1, 0) < 0) die("recv");
        if (i >= 0) lat[i] = (now_s() - t0) * 1e6;
    }
    zmq_send(d, "", 0, 0);            /* stop the echo server */
    zmq_recv(d, back, bufsize + 1, 0);
    waitpid(child, NULL, 0);
    qsort(lat, n, sizeof(double), cmp_double);
    printf("mode=roundtrip n=%ld size=%zu p50_us=%.1f p99_us=%.1f\n", n, size,
           lat[(long)((n - 1) * 0.50 + 0.5)], lat[(long)((n - 1) * 0.99 + 0.5)]);
    free(buf); free(back); free(lat);
    zmq_close(d);
    zmq_ctx_term(ctx);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "stream") == 0) return stream(atol(argv[2]), (size_t)atol(argv[3]));
    if (argc == 4 && strcmp(argv[1], "roundtrip") == 0) return roundtrip(atol(argv[2]), (size_t)atol(argv[3]));
    if (argc == 2 && strcmp(argv[1], "echo") == 0) { setvbuf(stdout, NULL, _IONBF, 0); return echo_server(1); }
    fprintf(stderr, "usage: zmq_floor stream N SIZE | roundtrip N SIZE | echo\n");
    return 2;
}
